"""The reconciled state: each collection's Delta Lake table (``table``), its file statistics
(``stats``) and the conversion of the earlier folder format (``migrate``)."""
