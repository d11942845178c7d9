"""Files the store reads and writes outside its database: plain files, folders that never
follow a link, snapshots, mirrors, copies between stores, the demo."""
