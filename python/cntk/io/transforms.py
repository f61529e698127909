"""cntk.io.transforms: the image transforms of CNTK's ImageDeserializer (crop, scale, mean, color),
as the dicts CNTK made of them. The image reader that applies them is not in ctk yet: a
MinibatchSource over an ImageDeserializer raises NotImplementedError naming it."""


def crop(crop_type='center', crop_size=0, side_ratio=0.0, area_ratio=0.0, aspect_ratio=1.0, jitter_type='none'):
    """CNTK's crop transform: crop_type 'center', 'randomside', 'randomarea' or 'multiview10'."""
    if crop_type not in ('center', 'randomside', 'randomarea', 'multiview10', 'random'):
        raise ValueError("crop: crop_type must be 'center', 'randomside', 'randomarea' or 'multiview10', not %r"
                         % (crop_type,))
    return {'type': 'Crop', 'cropType': crop_type, 'cropSize': crop_size, 'sideRatio': side_ratio,
            'areaRatio': area_ratio, 'aspectRatio': aspect_ratio, 'jitterType': jitter_type}


def scale(width, height, channels, interpolations='linear', scale_mode='fill', pad_value=-1):
    """CNTK's scale transform: to width x height x channels, interpolations 'nearest', 'linear',
    'cubic' or 'lanczos', scale_mode 'fill', 'crop' or 'pad'."""
    if scale_mode not in ('fill', 'crop', 'pad'):
        raise ValueError("scale: scale_mode must be 'fill', 'crop' or 'pad', not %r" % (scale_mode,))
    return {'type': 'Scale', 'width': width, 'height': height, 'channels': channels,
            'interpolations': interpolations, 'scaleMode': scale_mode, 'padValue': pad_value}


def mean(filename):
    """CNTK's mean transform: subtracts the mean image of an OpenCV XML file."""
    return {'type': 'Mean', 'meanFile': filename}


def color(brightness_radius=0.0, contrast_radius=0.0, saturation_radius=0.0):
    """CNTK's color jitter transform."""
    return {'type': 'Color', 'brightnessRadius': brightness_radius, 'contrastRadius': contrast_radius,
            'saturationRadius': saturation_radius}


__all__ = ['crop', 'scale', 'mean', 'color']
