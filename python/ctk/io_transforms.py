"""cntk.io.transforms (ctk.io_transforms): the image transforms of CNTK's ImageDeserializer (crop, scale,
mean, color), as the dictionaries CNTK made of them ('a:b' strings for ranges, as CNTK showed them)."""


def _range(value, name):
    """A number or a (min, max) pair as CNTK's 'min:max' string; min must not exceed max."""
    lo, hi = (value, value) if not isinstance(value, (tuple, list)) else tuple(value)
    if lo > hi:
        raise ValueError('%s: the first number must be smaller than or equal to the second number, got %r'
                         % (name, value))
    return '%g:%g' % (lo, hi)


def crop(crop_type='center', crop_size=0, side_ratio=0.0, area_ratio=0.0, aspect_ratio=1.0, jitter_type='none'):
    """CNTK's crop: crop_type 'center', 'randomside', 'randomarea' or 'multiview10'; crop_size a number
    or (width, height) (0: use the ratios); side_ratio, area_ratio and aspect_ratio a number or a
    (min, max) range drawn from with jitter_type 'uniratio'. Random crops flip horizontally half the time."""
    if crop_type.lower() not in ('center', 'randomside', 'randomarea', 'multiview10', 'random'):
        raise ValueError("crop: crop_type must be 'center', 'randomside', 'randomarea' or 'multiview10', not %r"
                         % (crop_type,))
    size = crop_size if isinstance(crop_size, (tuple, list)) else (crop_size, crop_size)
    return {'type': 'Crop', 'cropType': crop_type, 'cropSize': '%d:%d' % (size[0], size[1]),
            'sideRatio': _range(side_ratio, 'sideRatio'), 'areaRatio': _range(area_ratio, 'areaRatio'),
            'aspectRatio': _range(aspect_ratio, 'aspectRatio'), 'jitterType': jitter_type}


def scale(width, height, channels, interpolations='linear', scale_mode='fill', pad_value=-1):
    """CNTK's scale: to width x height (channels only declares the output shape), interpolations
    'nearest', 'linear', 'cubic' or 'lanczos', scale_mode 'fill', 'crop' or 'pad' (pad_value -1
    replicates the border)."""
    if scale_mode not in ('fill', 'crop', 'pad'):
        raise ValueError("scale: scale_mode must be 'fill', 'crop' or 'pad', not %r" % (scale_mode,))
    return {'type': 'Scale', 'width': width, 'height': height, 'channels': channels,
            'interpolations': interpolations, 'scaleMode': scale_mode, 'padValue': pad_value}


def mean(filename):
    """CNTK's mean: subtracts the mean image of an OpenCV XML/YAML file (MeanImg, Channel, Row, Col)."""
    return {'type': 'Mean', 'meanFile': filename}


def color(brightness_radius=0.0, contrast_radius=0.0, saturation_radius=0.0):
    """CNTK's colour jitter: brightness, contrast and saturation radii in [0, 1]."""
    for name, v in (('brightness_radius', brightness_radius), ('contrast_radius', contrast_radius),
                    ('saturation_radius', saturation_radius)):
        if not 0.0 <= v <= 1.0:
            raise ValueError('color: %s must be >= 0.0 and <= 1.0, got %r' % (name, v))
    return {'type': 'Color', 'brightnessRadius': brightness_radius, 'contrastRadius': contrast_radius,
            'saturationRadius': saturation_radius}


__all__ = ['crop', 'scale', 'mean', 'color']
