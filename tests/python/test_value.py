# cntk.core: Value (constructors, one_hot, create, mask, as_sequences) and NDArrayView, as CNTK 2.7
# scripts use them to feed and read data.
import numpy as np
import pytest

import cntk as C
from cntk.core import NDArrayView, Value
from csr_data import Csr as _Csr


def test_ndarrayview_from_dense_copies_unless_borrowed():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    v = NDArrayView.from_dense(a)
    assert v.shape == (2, 3) and v.dtype == np.float32 and not v.is_sparse
    a[0, 0] = 100
    assert v.asarray()[0, 0] == 0  # a copy
    b = NDArrayView.from_dense(a, borrow=True)
    a[0, 1] = 200
    assert b.asarray()[0, 1] == 200  # shares the array's memory
    np.testing.assert_array_equal(NDArrayView((2, 2), np.float64).to_ndarray(), np.zeros((2, 2)))
    assert C.NDArrayView is NDArrayView


def test_value_from_batch_and_sequences():
    v = Value(batch=np.ones((4, 3), np.float32))
    assert v.shape == (4, 3) and not v.is_sparse
    np.testing.assert_array_equal(v.mask, np.full((4, 1), 2))
    s = Value(batch=[np.ones((2, 3)), np.ones((4, 3))], dtype=np.float32)
    assert s.shape == (2, 4, 3)
    np.testing.assert_array_equal(s.mask, [[2, 1, 0, 0], [2, 1, 1, 1]])
    seqs = s.as_sequences()
    assert [q.shape for q in seqs] == [(2, 3), (4, 3)]
    np.testing.assert_array_equal(Value(data=NDArrayView.from_dense(np.eye(2))).asarray(), np.eye(2))
    assert isinstance(s.data, NDArrayView)


def test_value_errors():
    with pytest.raises(ValueError, match="batch"):
        Value()
    with pytest.raises(ValueError, match="sample shape"):
        Value(shape=(5,), batch=np.ones((2, 3)))
    with pytest.raises(ValueError, match="seq_starts"):
        Value(batch=[np.ones((2, 3))], seq_starts=[False, True])  # one flag per sequence
    # A sequence that goes on from the previous minibatch: its first frame is no start (CNTK's mask 1).
    np.testing.assert_array_equal(Value(batch=[np.ones((2, 3)), np.ones((1, 3))], seq_starts=[False, True]).mask,
                                  [[1, 1], [2, 0]])
    with pytest.raises(TypeError, match="DeviceDescriptor"):
        Value(batch=np.ones((2, 3)), device='gpu')


def test_one_hot_feeds_sequence_and_plain_inputs():
    v = Value.one_hot([[0, 2], [1]], 3)
    assert v.shape == (2, 2, 3) and v.is_sparse  # kept as indices
    np.testing.assert_array_equal(v.mask, [[2, 1], [2, 0]])
    np.testing.assert_array_equal(v.as_sequences()[0], [[1, 0, 0], [0, 0, 1]])
    np.testing.assert_array_equal(v.as_sequences()[1], [[0, 1, 0]])

    x = C.sequence.input_variable(3)
    w = np.arange(6, dtype=np.float32).reshape(3, 2)
    out = C.times(x, C.constant(w)).eval({x: v})
    np.testing.assert_allclose(out[0], w[[0, 2]])
    np.testing.assert_allclose(out[1], w[[1]])

    y = C.input_variable(3)  # single-index sequences feed a batch input, as in CNTK
    single = Value.one_hot([[2], [0]], 3, dtype=np.float64)
    assert single.dtype == np.float64
    np.testing.assert_allclose(C.times(y, C.constant(w)).eval({y: single}), w[[2, 0]])


def test_one_hot_errors():
    with pytest.raises(ValueError, match="index 3 at position 1 of sequence 0"):
        Value.one_hot([[0, 3]], 3)
    with pytest.raises(ValueError, match="num_classes"):
        Value.one_hot([[0]], 0)
    with pytest.raises(ValueError, match="empty"):
        Value.one_hot([], 4)


def test_create_binds_data_to_a_variable():
    x = C.sequence.input_variable(2)
    v = Value.create(x, [np.ones((3, 2), np.float32), np.zeros((1, 2), np.float32)])
    assert v.shape == (2, 3, 2)
    np.testing.assert_array_equal(v.mask, [[2, 1, 1], [2, 0, 0]])
    out = C.reduce_sum(x).eval({x: v})
    np.testing.assert_allclose(out[0], [2, 2, 2])
    np.testing.assert_allclose(out[1], [0])


def test_csr_inputs_one_hot_and_general():
    # One-hot rows stay indices (times gathers rows); other rows become dense; sequences take one
    # matrix each. The results equal feeding the dense arrays.
    w = np.arange(15, dtype=np.float32).reshape(5, 3)
    y = C.input_variable(5, is_sparse=True)
    f = C.times(y, C.constant(w))
    one_hot = np.eye(5, dtype=np.float32)[[4, 0, 2]]
    np.testing.assert_array_equal(f.eval({y: _Csr(one_hot)}), one_hot @ w)
    bag = np.array([[1, 0, 2, 0, 0], [0, 0, 0, 0, 0]], np.float32)
    np.testing.assert_array_equal(f.eval({y: _Csr(bag)}), bag @ w)
    s = C.sequence.input_variable(5, is_sparse=True)
    g = C.sequence.reduce_sum(C.times(s, C.constant(w)))
    seqs = [np.eye(5, dtype=np.float32)[[1, 2, 3]], np.eye(5, dtype=np.float32)[[0]]]
    np.testing.assert_array_equal(g.eval({s: [_Csr(q) for q in seqs]}), np.stack([q.sum(0) @ w for q in seqs]))
    with pytest.raises(ValueError, match='4 columns'):
        f.eval({y: _Csr(np.eye(4, dtype=np.float32))})


def test_value_and_ndarrayview_from_csr():
    hot = np.eye(4, dtype=np.float32)[[3, 1]]
    v = Value(batch=_Csr(hot))
    assert v.shape == (2, 4)
    np.testing.assert_array_equal(v.asarray(), hot)
    seqs = Value(batch=[_Csr(np.eye(4, dtype=np.float32)[[0, 1, 2]]), _Csr(np.eye(4, dtype=np.float32)[[3]])])
    assert [s.shape for s in seqs.as_sequences()] == [(3, 4), (1, 4)]
    bag = np.array([[0, 2, 0, 1]], np.float32)
    np.testing.assert_array_equal(NDArrayView.from_csr(_Csr(bag)).asarray(), bag)
    np.testing.assert_array_equal(NDArrayView.from_csr(_Csr(bag), shape=(2, 2)).asarray(), bag.reshape(2, 2))

    class Broken(_Csr):
        pass
    b = Broken(bag)
    b.indptr = np.array([0, 5], np.int32)
    with pytest.raises(ValueError, match='row pointers'):
        NDArrayView.from_csr(b)
