"""cntk.io's image readers as CNTK's scripts and tests use them: the configuration dictionaries of
ImageDeserializer and cntk.io.transforms (CNTK's test_image / test_image_with_crop_range), images
through a MinibatchSource (BGR planes, CHW), two readers drawing the same crops at the same minibatch
position (CNTK's test_crop_dimensionality), Base64 == files, the old ImageDeserializer.crop API,
grayscale, errors, and a few training steps of a ConvNet on images."""
import base64
import os
import struct
import zlib

import numpy as np
import pytest

import cntk as C
import cntk.io.transforms as xforms
from cntk.io import (MinibatchSource, ImageDeserializer, Base64ImageDeserializer, StreamDef, StreamDefs,
                     FULL_DATA_SWEEP)


def png_bytes(rgb):
    """A PNG file of an [H, W, 3] (or [H, W]) uint8 array, written here (no imaging library needed)."""
    rgb = np.asarray(rgb, dtype=np.uint8)
    h, w = rgb.shape[:2]
    color = 2 if rgb.ndim == 3 else 0
    raw = b''.join(b'\x00' + rgb[y].tobytes() for y in range(h))

    def chunk(kind, data):
        return struct.pack('>I', len(data)) + kind + data + struct.pack('>I', zlib.crc32(kind + data) & 0xffffffff)
    return (b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', w, h, 8, color, 0, 0, 0)) +
            chunk(b'IDAT', zlib.compress(raw)) + chunk(b'IEND', b''))


def write_images(folder, images, labels, name='map.txt'):
    """PNG files and a map file of '.../<i>.png<TAB>label' lines; returns the map file's path."""
    lines = []
    for i, (img, label) in enumerate(zip(images, labels)):
        with open(os.path.join(folder, '%d.png' % i), 'wb') as f:
            f.write(png_bytes(img))
        lines.append('.../%d.png\t%d\n' % (i, label))
    path = os.path.join(folder, name)
    with open(path, 'w') as f:
        f.writelines(lines)
    return path


def write_base64(path, images):
    """A Base64ImageDeserializer file of lines '<i><TAB><base64 PNG>' (label i); returns its path."""
    with open(path, 'w') as f:
        for i, img in enumerate(images):
            f.write('%d\t%s\n' % (i, base64.b64encode(png_bytes(img)).decode('ascii')))
    return path


def test_transform_dictionaries_are_cntks():
    # CNTK's test_image and test_image_with_crop_range, on the dictionaries themselves.
    transforms = [xforms.crop(crop_type='randomside', side_ratio=0.5, jitter_type='uniratio'),
                  xforms.scale(width=100, height=200, channels=3, interpolations='linear'),
                  xforms.mean('mean.txt')]
    d = ImageDeserializer('input.txt', StreamDefs(f=StreamDef(field='image', transforms=transforms),
                                                  l=StreamDef(field='label', shape=7)))
    assert d['type'] == 'ImageDeserializer' and d['file'] == 'input.txt'
    assert set(d['input'].keys()) == {'f', 'l'}
    assert d['input']['l']['labelDim'] == 7
    t0, t1, t2, t3 = d['input']['f']['transforms']
    assert (t0['type'], t1['type'], t2['type'], t3['type']) == ('Crop', 'Scale', 'Mean', 'Transpose')
    assert t0['cropType'] == 'randomside' and t0['cropSize'] == '0:0' and t0['sideRatio'] == '0.5:0.5'
    assert t0['aspectRatio'] == '1:1' and t0['areaRatio'] == '0:0' and t0['jitterType'] == 'uniratio'
    assert (t1['width'], t1['height'], t1['channels'], t1['interpolations']) == (100, 200, 3, 'linear')
    assert t2['meanFile'] == 'mean.txt'
    c = xforms.crop(crop_type='randomside', crop_size=(512, 424), side_ratio=(0.2, 0.5), area_ratio=(0.1, 0.75),
                    aspect_ratio=(0.3, 0.8), jitter_type='uniratio')
    assert (c['cropSize'], c['sideRatio'], c['areaRatio'], c['aspectRatio']) == ('512:424', '0.2:0.5', '0.1:0.75',
                                                                                 '0.3:0.8')
    with pytest.raises(ValueError, match='smaller than or equal'):
        xforms.crop(side_ratio=(0.5, 0.2))
    with pytest.raises(ValueError, match='brightness_radius'):
        xforms.color(brightness_radius=1.5)


def test_images_come_as_bgr_planes_in_chw_order(tmp_path):
    rng = np.random.RandomState(1)
    images = [rng.randint(0, 256, (5, 7, 3)).astype(np.uint8) for _ in range(4)]
    path = write_images(str(tmp_path), images, [0, 1, 2, 1])
    source = MinibatchSource(ImageDeserializer(path, StreamDefs(
        features=StreamDef(field='image'), labels=StreamDef(field='label', shape=3))), randomize=False)
    assert source.streams.features.shape == (3, 5, 7)
    mb = source.next_minibatch(4)
    x = mb[source.streams.features].asarray().reshape(4, 3, 5, 7)
    for i, img in enumerate(images):
        np.testing.assert_array_equal(x[i], img[:, :, ::-1].transpose(2, 0, 1))  # RGB file -> BGR planes
    labels = mb[source.streams.labels].asarray().reshape(4, 3)
    np.testing.assert_array_equal(labels.argmax(axis=1), [0, 1, 2, 1])


def test_two_readers_draw_the_same_crops_at_the_same_position(tmp_path):
    # CNTK's test_crop_dimensionality.
    rng = np.random.RandomState(1)
    path = write_images(str(tmp_path), [rng.randint(0, 256, (20, 40, 3)) for _ in range(5)], range(5))
    crop = xforms.crop(crop_type='randomside', crop_size=(20, 10), side_ratio=(0.2, 0.5), jitter_type='uniratio')
    d1 = ImageDeserializer(path, StreamDefs(images1=StreamDef(field='image', transforms=[
        xforms.scale(width=40, height=20, channels=3), crop]), labels1=StreamDef(field='label', shape=10)))
    d2 = ImageDeserializer(path, StreamDefs(images2=StreamDef(field='image', transforms=[crop]),
                                            labels2=StreamDef(field='label', shape=10)))
    mbs = MinibatchSource([d1, d2])
    for _ in range(5):
        mb = mbs.next_minibatch(1)
        images1 = mb[mbs.streams.images1].asarray()
        images2 = mb[mbs.streams.images2].asarray()
        assert images1.shape == (1, 1, 3, 10, 20)
        assert (images1 == images2).all()


def test_base64_reader_gives_what_the_files_give(tmp_path):
    rng = np.random.RandomState(1)
    images = [rng.randint(0, 256, (5, 7, 3)) for _ in range(10)]
    path = write_images(str(tmp_path), images, range(10))
    b64 = write_base64(str(tmp_path / 'b64.txt'), images)
    scale = [xforms.scale(width=7, height=5, channels=3)]
    a = MinibatchSource(Base64ImageDeserializer(b64, StreamDefs(
        images=StreamDef(field='image', transforms=scale), labels=StreamDef(field='label', shape=10))),
        randomize=False)
    b = MinibatchSource(ImageDeserializer(path, StreamDefs(
        images=StreamDef(field='image', transforms=scale), labels=StreamDef(field='label', shape=10))),
        randomize=False)
    for _ in range(3):
        ma, mb = a.next_minibatch(4), b.next_minibatch(4)
        np.testing.assert_array_equal(ma[a.streams.images].asarray(), mb[b.streams.images].asarray())


def test_cntk_2_0_crop_scale_mean_and_grayscale(tmp_path):
    rng = np.random.RandomState(2)
    path = write_images(str(tmp_path), [rng.randint(0, 256, (12, 12)) for _ in range(3)], [0, 1, 0])
    # CNTK 2.0's static transform constructors, as ConvNet_CIFAR10_DataAug's first version called them.
    transforms = [ImageDeserializer.crop(crop_type='Random', ratio=0.8, jitter_type='uniRatio'),
                  ImageDeserializer.scale(width=8, height=8, channels=1, interpolations='linear')]
    assert transforms[0]['cropType'] == 'randomside' and transforms[0]['sideRatio'] == '0.8:0.8'
    d = ImageDeserializer(path, StreamDefs(features=StreamDef(field='image', transforms=transforms),
                                           labels=StreamDef(field='label', shape=2)))
    d['grayscale'] = True  # CNTK's documented switch for one-channel images
    source = MinibatchSource(d)
    assert source.streams.features.shape == (1, 8, 8)
    assert source.next_minibatch(3)[source.streams.features].asarray().shape == (3, 1, 1, 8, 8)


def test_errors_name_the_field_the_line_and_the_image(tmp_path):
    with pytest.raises(ValueError, match="invalid field name 'pixels'"):
        ImageDeserializer('map.txt', StreamDefs(x=StreamDef(field='pixels')))
    with pytest.raises(ValueError, match="must be specified"):
        ImageDeserializer('map.txt', StreamDefs(y=StreamDef(field='label', shape=2)))
    path = write_images(str(tmp_path), [np.zeros((4, 4, 3))], [0])
    with open(path, 'a') as f:
        f.write('.../missing.png\t1\n')
    source = MinibatchSource(ImageDeserializer(path, StreamDefs(
        features=StreamDef(field='image'), labels=StreamDef(field='label', shape=2))), randomize=False)
    with pytest.raises(Exception, match="missing.png' on line 2 of map file"):
        source.next_minibatch(2)
    with pytest.raises(Exception, match='class id 5 is not below the label dimension 2'):
        bad = str(tmp_path / 'bad.txt')
        with open(bad, 'w') as f:
            f.write('.../0.png\t5\n')
        MinibatchSource(ImageDeserializer(bad, StreamDefs(features=StreamDef(field='image'),
                                                          labels=StreamDef(field='label', shape=2))))


def test_a_convnet_trains_on_images(tmp_path):
    # Two classes told apart by brightness: a few steps of a small ConvNet bring the loss down.
    rng = np.random.RandomState(3)
    labels = [i % 2 for i in range(64)]
    images = [np.clip(rng.normal(60 + 120 * l, 20, (16, 16, 3)), 0, 255) for l in labels]
    path = write_images(str(tmp_path), images, labels)
    transforms = [xforms.crop(crop_type='randomside', side_ratio=(0.8, 1.0), jitter_type='uniratio'),
                  xforms.scale(width=12, height=12, channels=3, interpolations='linear'),
                  xforms.color(brightness_radius=0.1)]
    source = MinibatchSource(ImageDeserializer(path, StreamDefs(
        features=StreamDef(field='image', transforms=transforms), labels=StreamDef(field='label', shape=2))))
    x = C.input_variable((3, 12, 12))
    y = C.input_variable(2)
    with C.layers.default_options(activation=C.relu, pad=True):
        z = C.layers.Sequential([C.layers.Convolution2D((3, 3), 8), C.layers.MaxPooling((2, 2), strides=2),
                                 C.layers.Dense(2, activation=None)])(x / 255.0)
    loss = C.cross_entropy_with_softmax(z, y)
    trainer = C.Trainer(z, (loss, C.classification_error(z, y)),
                        [C.momentum_sgd(z.parameters, C.learning_parameter_schedule(0.1),
                                        C.momentum_schedule(0.9))])
    losses = []
    for _ in range(30):
        mb = source.next_minibatch(16, input_map={x: source.streams.features, y: source.streams.labels})
        trainer.train_minibatch(mb)
        losses.append(trainer.previous_minibatch_loss_average)
    assert np.mean(losses[-5:]) < 0.5 * np.mean(losses[:5])


# ---- CBF (CNTK's CBFDeserializer) ----

MBDATA_DENSE = '''0  |S0 0   |S1 0
0   |S0 1   |S1 1
0   |S0 2
0   |S0 3   |S1 3
1   |S0 4
1   |S0 5   |S1 1
1   |S0 6   |S1 2
'''

MBDATA_SPARSE = '''0	|x 560:1	|y 1 0 0 0 0
0	|x 0:1
0	|x 0:1
1	|x 560:1	|y 0 1 0 0 0
1	|x 0:1
1	|x 0:1
1	|x 424:1
'''


@pytest.mark.parametrize('data,streams', [
    (MBDATA_DENSE, dict(features=StreamDef(field='S0', shape=1), labels=StreamDef(field='S1', shape=1))),
    (MBDATA_SPARSE, dict(features=StreamDef(field='x', shape=1000, is_sparse=True),
                         labels=StreamDef(field='y', shape=5, is_sparse=False)))])
def test_cbf_gives_what_ctf_gives(tmp_path, data, streams):
    # CNTK's test_compare_cbf_and_ctf, with ctk's converter in place of ctf2bin.py.
    from cntk.io import CTFDeserializer, CBFDeserializer, ctf_to_cbf
    ctf = str(tmp_path / 'data.txt')
    with open(ctf, 'w') as f:
        f.write(data)
    assert ctf_to_cbf(ctf, ctf + '.bin', streams) == 2
    for randomize in (False, True):
        for num_mbs, mb_size in zip([1, 1, 3, 10], [1, 10, 100, 2]):
            a = MinibatchSource(CTFDeserializer(ctf, StreamDefs(**streams)), randomize=randomize)
            b = MinibatchSource(CBFDeserializer(ctf + '.bin', StreamDefs(**streams)), randomize=randomize)
            assert sorted(s.name for s in a.stream_infos()) == sorted(s.name for s in b.stream_infos())
            for _ in range(num_mbs):
                ma, mb = a.next_minibatch(mb_size), b.next_minibatch(mb_size)
                for name in streams:
                    x, y = ma[a[name]], mb[b[name]]
                    assert (x.num_samples, x.num_sequences, x.shape, x.end_of_sweep) == \
                        (y.num_samples, y.num_sequences, y.shape, y.end_of_sweep)
                    np.testing.assert_array_equal(x.asarray(), y.asarray())


def test_base64_and_files_in_one_source_join_by_key(tmp_path):
    # CNTK's test_base64_is_equal_image: a Base64 file (one chunk) and a map file (one chunk an image)
    # in one MinibatchSource, joined by their line numbers, give the same images.
    rng = np.random.RandomState(1)
    images = [rng.randint(0, 256, (5, 7, 3)) for _ in range(10)]
    path = write_images(str(tmp_path), images, range(10))
    b64 = write_base64(str(tmp_path / 'b64.txt'), images)
    scale = [xforms.scale(width=7, height=5, channels=3)]
    mbs = MinibatchSource([
        Base64ImageDeserializer(b64, StreamDefs(images1=StreamDef(field='image', transforms=scale),
                                                labels1=StreamDef(field='label', shape=10))),
        ImageDeserializer(path, StreamDefs(images2=StreamDef(field='image', transforms=scale),
                                           labels2=StreamDef(field='label', shape=10)))])
    for _ in range(20):
        mb = mbs.next_minibatch(1)
        assert (mb[mbs.streams['images1']].asarray() == mb[mbs.streams['images2']].asarray()).all()


def test_cntk_alexnet_local_response_normalization():
    # CNTK's AlexNet example builds LRN as a convolution whose kernel [1 x 5 x 1 x 1] has the operand's
    # rank (no output-channel axis) over a placeholder: one output channel, as CNTK computed it.
    def lrn(k, n, alpha, beta):
        x = C.placeholder(name='lrn_arg')
        x2s = C.reshape(C.square(x), (1, C.InferredDimension), 0, 1)
        W = C.constant(alpha / (2 * n + 1), (1, 2 * n + 1, 1, 1), name='W')
        b = C.reshape(C.convolution(W, x2s), C.InferredDimension, 0, 2)
        return C.element_divide(x, C.exp(beta * C.log(k + b)))
    v = C.input_variable((6, 3, 3))
    y = lrn(1.0, 2, 0.0001, 0.75)(v)
    assert y.shape == (6, 3, 3)
    data = np.random.RandomState(0).normal(size=(2, 6, 3, 3)).astype(np.float32) * 10
    sq = np.pad(data ** 2, ((0, 0), (2, 2), (0, 0), (0, 0)))
    window = sum(sq[:, i:i + 6] for i in range(5)) * 0.0001 / 5
    np.testing.assert_allclose(y.eval({v: data}), data / (1.0 + window) ** 0.75, rtol=1e-5)
