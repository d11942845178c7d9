"""What several test files share. Test files import it by name (pytest puts tests/ on sys.path)."""

import hashlib


def digest(path):
    with open(path, "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest()
