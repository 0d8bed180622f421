"""Reconcile (docs/design.md §6): stream events and snapshot READ chunks into one state."""
