"""cntk.layers.sequence: layers over sequences."""
from ctk.layers import (Delay, Recurrence, RecurrenceFrom, Fold, UnfoldFrom, PastValueWindow)  # noqa: F401

__all__ = ['Delay', 'Recurrence', 'RecurrenceFrom', 'Fold', 'UnfoldFrom', 'PastValueWindow']
