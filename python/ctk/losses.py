"""cntk.losses: the training criteria."""
from ._ctk import (cross_entropy_with_softmax, squared_error, binary_cross_entropy,  # noqa: F401
                   weighted_binary_cross_entropy, cosine_distance, lambda_rank, nce_loss,
                   cosine_distance_with_negative_samples)

__all__ = ['cross_entropy_with_softmax', 'squared_error', 'binary_cross_entropy',
           'weighted_binary_cross_entropy', 'cosine_distance', 'lambda_rank', 'nce_loss',
           'cosine_distance_with_negative_samples']


def hierarchical_softmax_layer(input_var, label_index, label_dim, label_classes=None):
    """CNTK's two-level hierarchical softmax (written in Python by CNTK, as here): the label_dim labels
    are split into label_classes classes (default ceil(sqrt(label_dim))) of n = ceil(label_dim /
    label_classes) labels; p(label) = p(class) * p(label | class). label_index holds the label's index
    as a number [1]. Returns (output_prob, class_probs, all_probs): the label's probability, the class
    probabilities and, per class, the probabilities of its labels."""
    import math
    from . import _ctk as C
    input_dim = input_var.shape[0]
    if not label_classes:
        label_classes = int(math.ceil(math.sqrt(float(label_dim))))
    n_outputs_per_class = int(math.ceil(label_dim / label_classes))
    target_class = C.floor((label_index + 0.5) / n_outputs_per_class)
    target_output_in_class = C.round(label_index - target_class * n_outputs_per_class)

    w1 = C.parameter(shape=(input_dim, label_classes), init=C.glorot_normal(), name='hsoftmax_w1')
    b1 = C.parameter(shape=(label_classes,), init=C.glorot_normal(), name='hsoftmax_b1')
    w2s = C.parameter(shape=(label_classes, input_dim, n_outputs_per_class), init=C.glorot_normal(),
                      name='hsoftmax_w2s')
    b2s = C.parameter(shape=(label_classes, n_outputs_per_class), init=C.glorot_normal(), name='hsoftmax_b2s')

    class_probs = C.softmax(b1 + C.times(input_var, w1))
    # The target class's second-level weights, picked by a one-hot product.
    class_one_hot = C.one_hot(target_class, num_classes=label_classes, sparse_output=False)
    w2 = C.reshape(C.times(class_one_hot, w2s, output_rank=2), [input_dim, -1])
    b2 = C.reshape(C.times(class_one_hot, b2s, output_rank=1), [-1])
    probs_in_class = C.softmax(b2 + C.times(input_var, w2))
    prob_in_class = C.times_transpose(
        C.one_hot(target_output_in_class, num_classes=n_outputs_per_class, sparse_output=False), probs_in_class)
    class_prob = C.times_transpose(class_one_hot, class_probs)
    output_prob = prob_in_class * class_prob

    all_probs = []
    for i in range(label_classes):
        ci_one_hot = C.one_hot(C.constant(i), label_classes)
        w2a = C.times(ci_one_hot, w2s, output_rank=2)
        b2a = C.times(ci_one_hot, b2s, output_rank=1)
        probs_in_class_a = C.softmax(b2a + C.times(input_var, w2a))
        all_probs.append(probs_in_class_a * C.times_transpose(ci_one_hot, class_probs))
    return output_prob, class_probs, all_probs


__all__.append('hierarchical_softmax_layer')


def fmeasure(output, target, beta=1, name=''):
    """CNTK's fmeasure: 1 - the F-beta score of `output` against `target` (values in [0, 1], such as
    segmentation masks), per sample. Counts are summed over the spatial axes of a [C, H, W] sample
    (the class axis kept) and over the whole sample otherwise: precision = sum(o t) / sum(o), recall =
    sum(o t) / sum(t), F = (1 + beta^2) precision recall / (beta^2 precision + recall)."""
    from . import _ctk as C
    if len(output.shape) != len(target.shape):
        raise ValueError('fmeasure: output %s and target %s differ in rank' % (output.shape, target.shape))
    axis = (1, 2) if len(output.shape) == 3 else None

    def total(x):
        return C.reduce_sum(x, axis=axis) if axis else C.reduce_sum(x)

    hits = total(output * target)
    precision, recall = hits / total(output), hits / total(target)
    b2 = float(beta) ** 2
    return C.alias(1 - (1 + b2) * precision * recall / (b2 * precision + recall), name=name)


__all__.append('fmeasure')
