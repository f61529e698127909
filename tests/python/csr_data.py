"""SciPy's CSR matrix as far as ctk reads it (indptr, indices, data, shape), for tests without SciPy."""
import numpy as np


class Csr:
    """The CSR form of a dense 2-D array."""

    def __init__(self, dense):
        dense = np.asarray(dense, np.float32)
        self.shape = dense.shape
        rows, cols = np.nonzero(dense)
        self.indices = cols.astype(np.int32)
        self.data = dense[rows, cols]
        self.indptr = np.concatenate([[0], np.cumsum(np.count_nonzero(dense, 1))]).astype(np.int32)
