"""What a memory is: its fields and their rules, its columns and edges declared once, the
store's numbers, errors and results."""
