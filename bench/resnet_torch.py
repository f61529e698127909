"""The torch twins of ctk_bench's ResNet cases (build_resnet in ctk_bench.cpp): ResNet-20 for CIFAR-10
shapes (basic blocks, 16/32/64 channels, 1x1 projection shortcuts where the shape changes) and ResNet-50
for ImageNet shapes (bottleneck blocks 3/4/6/3, stride on the 3x3 as torchvision). Convolutions have
no bias and are followed by per-channel batch normalization, as on ctk's side. Written here because
Debian's python3-torch comes without torchvision."""

import torch.nn as nn


def conv_bn(c_in, c_out, k, stride):
    return nn.Sequential(nn.Conv2d(c_in, c_out, k, stride=stride, padding=k // 2, bias=False),
                         nn.BatchNorm2d(c_out))


class Block(nn.Module):
    """A residual block: body convolutions, a shortcut (a 1x1 projection where the shape changes), sum,
    relu; basic (two 3x3) when mid is None, else bottleneck (1x1 to mid, 3x3, 1x1 to c_out)."""

    def __init__(self, c_in, c_out, stride, mid=None):
        super().__init__()
        if mid is None:
            self.body = nn.Sequential(conv_bn(c_in, c_out, 3, stride), nn.ReLU(inplace=True),
                                      conv_bn(c_out, c_out, 3, 1))
        else:
            self.body = nn.Sequential(conv_bn(c_in, mid, 1, 1), nn.ReLU(inplace=True),
                                      conv_bn(mid, mid, 3, stride), nn.ReLU(inplace=True),
                                      conv_bn(mid, c_out, 1, 1))
        self.shortcut = conv_bn(c_in, c_out, 1, stride) if stride != 1 or c_in != c_out else nn.Identity()
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x):
        return self.relu(self.body(x) + self.shortcut(x))


def resnet20(classes=10):
    layers, c = [conv_bn(3, 16, 3, 1), nn.ReLU(inplace=True)], 16
    for stage, width in enumerate((16, 32, 64)):
        for b in range(3):
            layers.append(Block(c, width, 2 if stage > 0 and b == 0 else 1))
            c = width
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(c, classes)]
    return nn.Sequential(*layers)


def resnet50(classes=1000):
    layers = [conv_bn(3, 64, 7, 2), nn.ReLU(inplace=True), nn.MaxPool2d(3, 2, padding=1)]
    c = 64
    for stage, (mid, blocks) in enumerate(zip((64, 128, 256, 512), (3, 4, 6, 3))):
        for b in range(blocks):
            layers.append(Block(c, 4 * mid, 2 if stage > 0 and b == 0 else 1, mid))
            c = 4 * mid
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(c, classes)]
    return nn.Sequential(*layers)
