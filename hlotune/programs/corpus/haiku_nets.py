"""dm-haiku's own networks (`haiku.nets`): ResNet v1 and MobileNet v1 image classifiers.

Batch norm runs on its moving averages (`is_training=False`), which are inputs beside the
images, not parameters: the training step fine-tunes the weights with the statistics frozen.
In `-bf16` the weights, statistics and images are bfloat16, so haiku computes in it.
"""

from __future__ import annotations

from functools import partial

import jax

from hlotune.extras import require
from hlotune.programs.corpus.base import Built, CorpusModel

RESNET = {
    "tiny": dict(batch=2, image=32, depth=18),
    "small": dict(batch=4, image=64, depth=18),
    "base": dict(batch=8, image=96, depth=50),
}
MOBILENET = {
    "tiny": dict(batch=2, image=32, width_percent=25),
    "small": dict(batch=4, image=64, width_percent=50),
    "base": dict(batch=8, image=128, width_percent=100),
}
CLASSES = 10
# MobileNet v1's channels per depthwise-separable block (Howard et al. 2017), scaled by width.
MOBILENET_CHANNELS = (64, 128, 128, 256, 256, 512, 512, 512, 512, 512, 512, 1024, 1024)


def _build(network, dtype, *, batch: int, image: int, **shape) -> Built:
    hk = require("haiku", "corpus", "the corpus model haiku")
    name, kwargs = network(**shape)
    model = hk.transform_with_state(
        lambda x, training: getattr(hk.nets, name)(num_classes=CLASSES, **kwargs)(x, is_training=training)
    )

    def apply(params, x):
        state, images = x
        return model.apply(params, state, None, images, False)[0]

    def init(key):
        key_params, key_x, key_y = jax.random.split(key, 3)
        images = jax.random.normal(key_x, (batch, image, image, 3))
        params, state = model.init(key_params, images, True)
        return params, (state, images), jax.random.randint(key_y, (batch,), 0, CLASSES)

    return Built(init, apply)


def _resnet(depth: int):
    return f"ResNet{depth}", {}


def _mobilenet(width_percent: int):
    return "MobileNetV1", {"channels": [c * width_percent // 100 for c in MOBILENET_CHANNELS]}


MODELS = [
    CorpusModel("haiku-resnet", "haiku.nets ResNet v1 (18, 50 at base) image classifier",
                "dm-haiku", RESNET, partial(_build, _resnet)),
    CorpusModel("haiku-mobilenet", "haiku.nets MobileNet v1 (depthwise separable convolutions)",
                "dm-haiku", MOBILENET, partial(_build, _mobilenet)),
]
