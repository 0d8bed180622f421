"""The reconciled state: each collection's Delta Lake table (``table``) and its file statistics
(``stats``)."""
