"""Hugging Face `transformers` 4.x Flax models, built from config objects with random weights:
text encoders (masked LM), decoders (causal LM), encoder-decoders, vision, speech and CLIP.

Each family names its Flax class, its config class and how a size fills the config; the
loss is cross-entropy of the model's logits against random labels (next token, masked token,
class, frame or the matching image-text pair). T5, LongT5 and mT5 are left out: their
relative-position buckets call `jnp.clip(a_max=...)`, which jax 0.10 removed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial

import jax

from hlotune.extras import require
from hlotune.programs.corpus.base import Built, CorpusModel

TEXT = {
    "tiny": dict(batch=2, seq=32, vocab=512, hidden=64, layers=2, heads=2),
    "small": dict(batch=4, seq=64, vocab=1000, hidden=128, layers=2, heads=4),
    "base": dict(batch=8, seq=128, vocab=4000, hidden=256, layers=4, heads=4),
}
VISION = {
    "tiny": dict(batch=2, image=32, patch=8, hidden=64, layers=2, heads=2),
    "small": dict(batch=4, image=32, patch=4, hidden=128, layers=2, heads=4),
    "base": dict(batch=8, image=64, patch=8, hidden=256, layers=4, heads=4),
}
CNN = {
    "tiny": dict(batch=2, image=32, width=16, depth=1),
    "small": dict(batch=4, image=64, width=32, depth=1),
    "base": dict(batch=8, image=96, width=64, depth=2),
}
CLIP = {size: VISION[size] | {"seq": TEXT[size]["seq"], "vocab": TEXT[size]["vocab"]} for size in VISION}
SPEECH = {  # Whisper: `frames` of 80 mel bins; the decoder reads `seq` tokens
    "tiny": dict(batch=2, frames=100, seq=16, vocab=512, hidden=64, layers=1, heads=2),
    "small": dict(batch=2, frames=400, seq=32, vocab=1000, hidden=128, layers=2, heads=4),
    "base": dict(batch=4, frames=1000, seq=64, vocab=4000, hidden=256, layers=4, heads=4),
}
AUDIO = {  # Wav2Vec2: raw `samples` at 16 kHz, 20 ms frames after its convolutions
    "tiny": dict(batch=2, samples=4000, hidden=64, layers=2, heads=2),
    "small": dict(batch=2, samples=16000, hidden=128, layers=2, heads=4),
    "base": dict(batch=4, samples=32000, hidden=256, layers=4, heads=4),
}


def _bert(s, **extra) -> dict:
    """The BERT spelling of a config, which most families share."""
    return dict(vocab_size=s["vocab"], hidden_size=s["hidden"], num_hidden_layers=s["layers"],
                num_attention_heads=s["heads"], intermediate_size=4 * s["hidden"],
                max_position_embeddings=s["seq"]) | extra


def _bart(s, **extra) -> dict:
    """The BART spelling of an encoder-decoder config (BART, mBART, Pegasus, Marian, Whisper)."""
    return dict(vocab_size=s["vocab"], d_model=s["hidden"], encoder_layers=s["layers"],
                decoder_layers=s["layers"], encoder_attention_heads=s["heads"],
                decoder_attention_heads=s["heads"], encoder_ffn_dim=4 * s["hidden"],
                decoder_ffn_dim=4 * s["hidden"], max_position_embeddings=s["seq"]) | extra


def _vit(s, **extra) -> dict:
    return dict(image_size=s["image"], patch_size=s["patch"], hidden_size=s["hidden"],
                num_hidden_layers=s["layers"], num_attention_heads=s["heads"],
                intermediate_size=4 * s["hidden"], num_labels=10) | extra


def _cnn(s, **extra) -> dict:
    return dict(embedding_size=s["width"], hidden_sizes=[s["width"] * 2**i for i in range(4)],
                depths=[s["depth"]] * 4, num_labels=10) | extra


def _llama(s, **extra) -> dict:
    """Llama's Flax rotary table keeps `max_position_embeddings` of its 2 * head_dim entries,
    so it must not be shorter than that."""
    positions = max(s["seq"], 2 * s["hidden"] // s["heads"])
    return _bert(s, num_key_value_heads=max(1, s["heads"] // 2),
                 max_position_embeddings=positions) | extra


def _gpt2(s, **extra) -> dict:
    return dict(vocab_size=s["vocab"], n_embd=s["hidden"], n_layer=s["layers"],
                n_head=s["heads"], n_positions=s["seq"]) | extra


def _gpt_neo(s) -> dict:
    """Global and local attention layers in turn, the local window half the sequence."""
    return dict(vocab_size=s["vocab"], hidden_size=s["hidden"], num_layers=s["layers"],
                num_heads=s["heads"], max_position_embeddings=s["seq"],
                attention_types=[[["global", "local"], s["layers"] // 2]],
                window_size=s["seq"] // 2)


def _ids(key, s):
    return jax.random.randint(key, (s["batch"], s["seq"]), 1, s["vocab"])


def _text(key, s) -> dict:
    return {"input_ids": _ids(key, s)}


def _seq2seq(key, s) -> dict:
    encoder, decoder = jax.random.split(key)
    return {"input_ids": _ids(encoder, s), "decoder_input_ids": _ids(decoder, s)}


def _image(key, s) -> dict:
    """Pixels as the Flax vision models take them: NCHW."""
    return {"pixel_values": jax.random.normal(key, (s["batch"], 3, s["image"], s["image"]))}


def _image_text(key, s) -> dict:
    text, image = jax.random.split(key)
    return _text(text, s) | _image(image, s)


def _speech(key, s) -> dict:
    audio, text = jax.random.split(key)
    return {"input_features": jax.random.normal(audio, (s["batch"], 80, s["frames"])),
            "decoder_input_ids": _ids(text, s)}


def _audio(key, s) -> dict:
    return {"input_values": jax.random.normal(key, (s["batch"], s["samples"]))}


def _build(model_class: str, config_class: str, config: Callable[[Mapping], dict],
           inputs: Callable, dtype, **size) -> Built:
    transformers = require("transformers", "corpus", f"the corpus model {model_class}")
    settings = getattr(transformers, config_class)(**config(size))
    model = getattr(transformers, model_class)(settings, dtype=dtype, _do_init=False)

    def apply(params, x):
        return model(**x, params=params)[0]  # the logits (CLIP: logits per image)

    def init(key):
        key_params, key_x, key_y = jax.random.split(key, 3)
        params = model.init_weights(key_params, model.input_shape)
        x = inputs(key_x, size)
        logits = jax.eval_shape(apply, params, x)
        return params, x, jax.random.randint(key_y, logits.shape[:-1], 0, logits.shape[-1])

    return Built(init, apply)


def _family(name: str, description: str, model_class: str, config_class: str, sizes, config,
            inputs) -> CorpusModel:
    build = partial(_build, model_class, config_class, config, inputs)
    return CorpusModel(f"hf-{name}", description, "transformers", sizes, build)


MODELS = [
    _family("bert", "BERT encoder, masked LM", "FlaxBertForMaskedLM", "BertConfig", TEXT, _bert, _text),
    _family("roberta", "RoBERTa encoder, masked LM", "FlaxRobertaForMaskedLM", "RobertaConfig",
            TEXT, lambda s: _bert(s, max_position_embeddings=s["seq"] + 2), _text),
    _family("electra", "ELECTRA encoder (factorised embeddings), masked LM", "FlaxElectraForMaskedLM",
            "ElectraConfig", TEXT, lambda s: _bert(s, embedding_size=s["hidden"] // 2), _text),
    _family("albert", "ALBERT encoder (shared layers), masked LM", "FlaxAlbertForMaskedLM",
            "AlbertConfig", TEXT, lambda s: _bert(s, embedding_size=s["hidden"] // 2), _text),
    _family("distilbert", "DistilBERT encoder, masked LM", "FlaxDistilBertForMaskedLM",
            "DistilBertConfig", TEXT,
            lambda s: dict(vocab_size=s["vocab"], dim=s["hidden"], n_layers=s["layers"],
                           n_heads=s["heads"], hidden_dim=4 * s["hidden"],
                           max_position_embeddings=s["seq"]), _text),
    _family("roformer", "RoFormer encoder (rotary positions), masked LM", "FlaxRoFormerForMaskedLM",
            "RoFormerConfig", TEXT, _bert, _text),
    _family("gpt2", "GPT-2 decoder, causal LM", "FlaxGPT2LMHeadModel", "GPT2Config", TEXT, _gpt2, _text),
    _family("gpt-neo", "GPT-Neo decoder (global and local attention), causal LM",
            "FlaxGPTNeoForCausalLM", "GPTNeoConfig", TEXT, _gpt_neo, _text),
    _family("gpt-j", "GPT-J decoder (parallel blocks, rotary), causal LM", "FlaxGPTJForCausalLM",
            "GPTJConfig", TEXT, lambda s: _gpt2(s, rotary_dim=s["hidden"] // s["heads"] // 2), _text),
    _family("opt", "OPT decoder, causal LM", "FlaxOPTForCausalLM", "OPTConfig", TEXT,
            lambda s: dict(vocab_size=s["vocab"], hidden_size=s["hidden"],
                           num_hidden_layers=s["layers"], num_attention_heads=s["heads"],
                           ffn_dim=4 * s["hidden"], max_position_embeddings=s["seq"],
                           word_embed_proj_dim=s["hidden"]), _text),
    _family("bloom", "BLOOM decoder (ALiBi), causal LM", "FlaxBloomForCausalLM", "BloomConfig", TEXT,
            lambda s: dict(vocab_size=s["vocab"], hidden_size=s["hidden"], n_layer=s["layers"],
                           n_head=s["heads"]), _text),
    _family("xglm", "XGLM decoder, causal LM", "FlaxXGLMForCausalLM", "XGLMConfig", TEXT,
            lambda s: dict(vocab_size=s["vocab"], d_model=s["hidden"], num_layers=s["layers"],
                           attention_heads=s["heads"], ffn_dim=4 * s["hidden"],
                           max_position_embeddings=s["seq"]), _text),
    _family("llama", "Llama decoder (RMSNorm, rotary, grouped-query attention), causal LM",
            "FlaxLlamaForCausalLM", "LlamaConfig", TEXT, _llama, _text),
    _family("mistral", "Mistral decoder (sliding-window attention), causal LM",
            "FlaxMistralForCausalLM", "MistralConfig", TEXT,
            lambda s: _llama(s, sliding_window=s["seq"] // 2), _text),
    _family("gemma", "Gemma decoder (multi-query attention, GeGLU), causal LM",
            "FlaxGemmaForCausalLM", "GemmaConfig", TEXT,
            lambda s: _llama(s, num_key_value_heads=1, head_dim=s["hidden"] // s["heads"]), _text),
    _family("bart", "BART encoder-decoder", "FlaxBartForConditionalGeneration", "BartConfig",
            TEXT, _bart, _seq2seq),
    _family("mbart", "mBART encoder-decoder (pre-norm)", "FlaxMBartForConditionalGeneration",
            "MBartConfig", TEXT, _bart, _seq2seq),
    _family("pegasus", "Pegasus encoder-decoder (sinusoidal positions)",
            "FlaxPegasusForConditionalGeneration", "PegasusConfig", TEXT, _bart, _seq2seq),
    _family("marian", "Marian translation encoder-decoder", "FlaxMarianMTModel", "MarianConfig",
            TEXT, lambda s: _bart(s, decoder_start_token_id=0, pad_token_id=0), _seq2seq),
    _family("vit", "ViT image classifier", "FlaxViTForImageClassification", "ViTConfig",
            VISION, _vit, _image),
    _family("beit", "BEiT image classifier (relative position bias)", "FlaxBeitForImageClassification",
            "BeitConfig", VISION, lambda s: _vit(s, use_relative_position_bias=True), _image),
    _family("dinov2", "DINOv2 image classifier (layer scale)", "FlaxDinov2ForImageClassification",
            "Dinov2Config", VISION, _vit, _image),
    _family("resnet", "ResNet image classifier", "FlaxResNetForImageClassification", "ResNetConfig",
            CNN, _cnn, _image),
    _family("regnet", "RegNet image classifier (grouped convolutions)",
            "FlaxRegNetForImageClassification", "RegNetConfig", CNN,
            lambda s: _cnn(s, groups_width=s["width"] // 2), _image),
    _family("clip", "CLIP text and image towers, contrastive logits", "FlaxCLIPModel", "CLIPConfig",
            CLIP, lambda s: dict(projection_dim=s["hidden"],
                                 text_config=_bert(s),
                                 vision_config=_vit(s)), _image_text),
    _family("whisper", "Whisper speech encoder-decoder on log-mel frames",
            "FlaxWhisperForConditionalGeneration", "WhisperConfig", SPEECH,
            lambda s: _bart(s, num_mel_bins=80, max_source_positions=s["frames"] // 2,
                            max_target_positions=s["seq"]),
            _speech),
    _family("wav2vec2", "Wav2Vec2 speech encoder on raw audio, CTC head", "FlaxWav2Vec2ForCTC",
            "Wav2Vec2Config", AUDIO,
            lambda s: dict(vocab_size=32, hidden_size=s["hidden"], num_hidden_layers=s["layers"],
                           num_attention_heads=s["heads"], intermediate_size=4 * s["hidden"],
                           conv_dim=(s["hidden"],) * 3, conv_stride=(5, 2, 2), conv_kernel=(10, 3, 3),
                           num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=s["heads"],
                           do_stable_layer_norm=True, feat_extract_norm="layer"), _audio),
]
