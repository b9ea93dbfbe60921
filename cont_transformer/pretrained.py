"""What every model of this package adds to ``PreTrainedModel``.

* Complete Hub folders: ``save_pretrained`` writes, besides what transformers writes
  (weights, config, the model code with the ``auto_map`` entry of the task class), the
  ``auto_map`` entries of the base model (``AutoModel``) and, for a model with one, of
  its image processor (``AutoImageProcessor``), so every Auto class and ``pipeline``
  load the folder with ``trust_remote_code=True``; for a model with a pipeline of its
  own (the tagger's, ``pipeline_cont_transformer.py``), its ``custom_pipelines`` entry
  and code; and a model card
  (:func:`~cont_transformer.model_card.write_model_card`) unless the folder holds one
  the user wrote.
* Parameter counts split into embedding and non-embedding parameters (compression acts
  on the latter).
* A checkpoint whose coefficient shapes disagree with its config is refused by name.
* Loading runs no code and fails in one line naming the file: weights are read as
  transformers reads them (safetensors, or a pickle unpickled ``weights_only``, which
  refuses anything but tensors); when that fails, :func:`unreadable_weights` names the
  first weights file of the folder that does not load that way. A model with a NaN or
  infinite value in any tensor (a diverged run), or one beyond :data:`MAX_ABS_WEIGHT` in
  magnitude, is refused by :func:`check_finite`.
* The weights record the config they were saved with (:mod:`.config_record`, written by
  :meth:`~ContinuousPreTrainedModel.save_pretrained`): a load whose config differs in a
  field that changes the computation is refused, naming the fields, before the weights
  are read (:func:`check_config_record`); weights without a record load with a warning.
  Id buffers out of range (a damaged file) are refused by :func:`check_buffers`, and a
  folder of another task model of the package (a language model given to the tagger) is
  named so (:func:`check_model_kind`).
* The load is strict: a tensor the weights lack or hold beyond the model's, or of another
  shape than the config gives, is refused in one line naming it (transformers would
  initialise it afresh, or drop it, and print a table). Tensors transformers legitimately
  leaves out (tied to another, ``_keys_to_ignore_on_load_missing``) load as before, and a
  base model read from a folder with a head ignores the head's tensors.
* Loading never runs code from a model folder and never asks: every load of the package
  passes ``trust_remote_code=False``, and first :func:`check_no_custom_code` refuses, in
  one line, a folder whose ``auto_map`` names a class that is not one of this package's
  own (as :meth:`~ContinuousPreTrainedModel.save_pretrained` writes them), or names them
  for a ``model_type`` of another model, or whose ``tokenizer_class`` is not one
  transformers ships.
* Activation checkpointing: ``gradient_checkpointing_enable()`` (transformers 5 also
  spells it ``activation_checkpointing_enable()``) sets it on every ODE block, which
  then checkpoints each integration step.
"""

from __future__ import annotations

import copy
import json
import os
import pickle
import warnings
from pathlib import Path

import torch
from transformers import PreTrainedConfig, PreTrainedModel
from transformers.dynamic_module_utils import custom_object_save

from .config_record import DIGEST_KEY, config_mismatch, read_metadata, record_config, unrecorded_warning
from .model_card import MAX_ABS_WEIGHT, write_model_card
from .ode_block import OdeBlock
from .tagger_files import TAGGER_FILE_OF, replace_file

# What a saved folder's processor is, for AutoProcessor (transformers' name for the file).
PROCESSOR_FILE = "processor_config.json"


def class_reference(cls: type) -> str:
    """``"module.Class"``, as an ``auto_map`` names a class of a folder's code files."""
    return f"{cls.__module__.rsplit('.', 1)[-1]}.{cls.__name__}"


def native_bfloat16(device: torch.device) -> bool:
    """Whether ``device`` is a CPU with bfloat16 arithmetic in its instruction set
    (AVX-512 BF16 or AMX), where a model runs several times faster in bfloat16."""
    if device.type != "cpu":
        return False
    # torch's own probes of the instruction set (private names: absent, they answer no)
    probes = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")
    return any(getattr(torch.cpu, name, lambda: False)() for name in probes)


def inference_dtype(device: torch.device, dtype: torch.dtype | None = None) -> torch.dtype | None:
    """The precision to run a model in for inference, the default of every door to a
    tagger (``Tagger``, ``tag.py``, the folder's pipeline): ``dtype`` when given; otherwise
    bfloat16 on a CPU with native bfloat16 arithmetic (:func:`native_bfloat16`), and None
    (as saved) elsewhere."""
    if dtype is not None:
        return dtype
    return torch.bfloat16 if native_bfloat16(device) else None


# The weights files transformers looks for, in the order it prefers them.
WEIGHTS_PATTERNS = ("*.safetensors", "pytorch_model*.bin", "*.pt", "*.pth")


def load_error(path: Path) -> str | None:
    """Why the weights file ``path`` does not load the safe way (None if it loads).

    A pickle is unpickled ``weights_only``: a file holding anything but tensors (it could
    run code) is refused without running it."""
    from safetensors.torch import load_file

    try:
        if path.suffix == ".safetensors":
            load_file(path)
        else:
            with warnings.catch_warnings():  # torch's note on the pickle protocol
                warnings.simplefilter("ignore")
                torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError:
        return "not a weights file: a pickle holding more than tensors (it could run code; it was not run)"
    except Exception as err:  # noqa: BLE001 (any failure to load is the file's fault)
        return " ".join(str(err).split()) or type(err).__name__
    return None


def unreadable_weights(folder: str | os.PathLike) -> tuple[Path, str] | None:
    """The first weights file of a local model folder that does not load, and why; None
    when every one loads (or ``folder`` is not a local folder)."""
    folder = Path(folder)
    if not folder.is_dir():
        return None
    for pattern in WEIGHTS_PATTERNS:
        for path in sorted(folder.glob(pattern)):
            reason = load_error(path)
            if reason is not None:
                return path, reason
    return None


# A BatchNorm running variance is in squared units of its activations (MAX_ABS_WEIGHT: model_card.py).
MAX_RUNNING_VARIANCE = MAX_ABS_WEIGHT**2


def check_finite(model: torch.nn.Module, source: str | os.PathLike) -> None:
    """Raise ``ValueError`` naming ``source`` and the first tensor of ``model`` holding a NaN
    or an infinite value, or a value beyond :data:`MAX_ABS_WEIGHT` in magnitude
    (:data:`MAX_RUNNING_VARIANCE` for a BatchNorm's running variance)."""
    for name, tensor in model.state_dict().items():
        if not tensor.is_floating_point() or tensor.device.type == "meta" or not tensor.numel():
            continue
        if not bool(tensor.isfinite().all()):
            raise ValueError(
                f"{source}: tensor {name} holds NaN or infinite values (a diverged training run?); refusing to load it"
            )
        largest = float(tensor.detach().abs().max())
        limit = MAX_RUNNING_VARIANCE if name.endswith("running_var") else MAX_ABS_WEIGHT
        if largest > limit:
            raise ValueError(
                f"{source}: tensor {name} holds a value of magnitude {largest:.3g}, beyond the {limit:g} "
                "no trained model of this package reaches (an edited weights file?); refusing to load it"
            )


def check_buffers(model: torch.nn.Module, source: str | os.PathLike) -> None:
    """Raise ``ValueError`` naming ``source`` and the buffer when a module of ``model`` that
    checks its buffers (a ``buffer_problem()`` method: the spelling tables' character ids and
    lengths) finds a value outside its range, as a damaged weights file gives."""
    for name, module in model.named_modules():
        problem = module.buffer_problem() if callable(getattr(module, "buffer_problem", None)) else None
        if problem is not None:
            raise ValueError(f"{source}: tensor {name}.{problem} (a damaged weights file?); refusing to load it")


def loading_problem(model: torch.nn.Module, loading_info) -> str | None:
    """The first tensor a load leaves missing or finds unexpected, in words; None when the
    weights are the model's exactly. Tensors transformers itself leaves out (tied weights,
    ``_keys_to_ignore_on_load_*`` patterns) do not count, nor, for a base model read from a
    folder with a head, the head's tensors."""
    info = copy.copy(loading_info)
    model._adjust_missing_and_unexpected_keys(info)  # transformers' own exceptions, on a copy
    tied = set(getattr(model, "all_tied_weights_keys", None) or {})
    missing = sorted(set(info.missing_keys) - tied)
    if missing:
        return f"tensor {missing[0]} is missing from the weights ({len(missing)} missing)"
    unexpected = sorted(info.unexpected_keys)
    if model.base_model is model:  # a head's tensors are not a base model's concern
        own = {name for name, _ in model.named_children()} | {name for name, _ in model.named_parameters()}
        unexpected = [key for key in unexpected if key.split(".", 1)[0] in own]
    if unexpected:
        return f"tensor {unexpected[0]} in the weights is not one of the model's ({len(unexpected)} unexpected)"
    return None


def check_config_record(config, checkpoint_files, source) -> None:
    """Refuse, in one line naming ``source`` and the fields, a ``config`` that differs from
    the one recorded in the first safetensors file of ``checkpoint_files`` when it was saved
    (:mod:`.config_record`); a file without a record loads, with one warning."""
    weights = [path for path in checkpoint_files or () if str(path).endswith(".safetensors")]
    if not weights:
        return
    metadata = read_metadata(weights[0])
    if metadata is None:  # a header that does not read: the load names the file
        return
    problem = config_mismatch(config, metadata, TAGGER_FILE_OF)
    if problem is not None:
        raise ValueError(
            f"{source}: {problem} (recorded in {Path(weights[0]).name}); the weights and config.json of a model "
            "folder belong together"
        )
    if DIGEST_KEY not in metadata:
        unrecorded_warning(weights[0])


# What each task model of this package is, in words: a folder of one loaded as another is
# named so (rather than by the first head tensor it lacks).
MODEL_KINDS = {
    "ContTransformerForTokenClassification": "a tagger",
    "ContTransformerForMaskedLM": "a masked language model",
    "OdeResNetForImageClassification": "an image classifier",
}


def kind_problem(architectures, wanted: str) -> str | None:
    """``"is X, not Y"`` when ``architectures`` (a config's) names a task model of this package
    (:data:`MODEL_KINDS`) other than the class named ``wanted``; None otherwise."""
    found = architectures[0] if isinstance(architectures, (list, tuple)) and architectures else None
    if found in MODEL_KINDS and wanted in MODEL_KINDS and found != wanted:
        return f"is {MODEL_KINDS[found]}, not {MODEL_KINDS[wanted]}"
    return None


def check_model_kind(folder: str | os.PathLike, wanted: type) -> None:
    """Refuse, in one line naming ``folder``, a local model folder whose ``config.json`` names
    another task model of this package than ``wanted`` (a masked language model or an image
    classifier given to the tagger). A folder without a readable ``config.json`` is left to
    the load."""
    try:
        saved = json.loads((Path(folder) / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    problem = kind_problem(saved.get("architectures") if isinstance(saved, dict) else None, wanted.__name__)
    if problem is not None:
        raise ValueError(f"{folder} {problem}")


# The files of a model folder through which transformers' Auto classes import code.
CODE_NAMING_FILES = ("config.json", "tokenizer_config.json", "preprocessor_config.json", "processor_config.json")
# The classes of this package a saved folder's ``auto_map`` or ``custom_pipelines`` may name
# (``"module.Class"`` -> the class): those registered with the Auto classes and the
# pipeline registry (``runtime/auto.py`` registers them here too), so this file never
# imports the modeling files that import it.
_OWN_CLASSES: dict[str, type] = {}


def register_own_class(cls: type) -> None:
    """Allow ``auto_map`` entries naming ``cls`` (:func:`is_own_class`); a configuration
    class adds its ``model_type`` to :func:`own_model_types`."""
    _OWN_CLASSES[class_reference(cls)] = cls


class CustomCodeError(ValueError):
    """A model folder names code of its own (``auto_map``) or a tokenizer class transformers
    does not ship; this package does not run it."""


def own_model_types() -> set[str]:
    """The ``model_type`` of every configuration class of this package (registered)."""
    return {cls.model_type for cls in _OWN_CLASSES.values() if issubclass(cls, PreTrainedConfig)}


def is_own_class(reference: str) -> bool:
    """Whether ``reference`` (``"module.Class"`` of an ``auto_map``) names a class of this
    package registered with :func:`register_own_class` (importing the package registers
    every one with the Auto classes)."""
    return reference in _OWN_CLASSES


def _references(auto_map) -> list[tuple[str, str]]:
    """``(Auto class, reference)`` of every class an ``auto_map`` names; a list or any
    other value (the legacy tokenizer form) counts as ``AutoTokenizer``'s."""
    entries = auto_map.items() if isinstance(auto_map, dict) else [("AutoTokenizer", auto_map)]
    found = []
    for key, value in entries:
        for reference in value if isinstance(value, (list, tuple)) else [value]:
            if reference is not None:
                found.append((str(key), str(reference)))
    return found


def _pipeline_references(custom_pipelines) -> list[tuple[str, str]]:
    """``("custom_pipelines[task]", reference)`` of every pipeline class a ``config.json``'s
    ``custom_pipelines`` names (its ``impl``; an entry without one is named by its value)."""
    if not isinstance(custom_pipelines, dict):
        return [("custom_pipelines", str(custom_pipelines))]
    return [
        (f"custom_pipelines[{task}]", str(info.get("impl") if isinstance(info, dict) else info))
        for task, info in custom_pipelines.items()
    ]


def _shipped_tokenizer_class(name: str) -> bool:
    """Whether ``name`` is a tokenizer class transformers ships (or a class registered in
    this process)."""
    from transformers.models.auto.tokenization_auto import tokenizer_class_from_name

    return tokenizer_class_from_name(name) is not None


def check_no_custom_code(folder: str | os.PathLike) -> None:
    """Refuse a local model folder that would have transformers import code from it.

    Raises :class:`CustomCodeError` (a ``ValueError``) naming the file and the entry when
    the ``auto_map`` of any of :data:`CODE_NAMING_FILES`, or the ``custom_pipelines`` of
    ``config.json``, names a class that is not one of this package's (:func:`is_own_class`),
    when ``config.json``'s ``auto_map`` names them for a ``model_type`` that is not one of
    this package's (:func:`own_model_types`) or not its ``AutoConfig``'s, or when a
    ``tokenizer_class`` is not a class transformers ships. Loads also pass
    ``trust_remote_code=False``, so nothing runs either way; this says why in one line. A
    folder that is not local (a Hub id), or a file that is not valid JSON, is left to transformers."""
    folder = Path(folder)
    if not folder.is_dir():
        return
    for name in CODE_NAMING_FILES:
        path = folder / name
        try:
            saved = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(saved, dict):
            continue
        references = _references(saved.get("auto_map") or {})
        if name == "config.json":
            references += _pipeline_references(saved.get("custom_pipelines") or {})
        foreign = [(key, ref) for key, ref in references if not is_own_class(ref)]
        if foreign:
            named = ", ".join(f"{key} -> {ref}" for key, ref in foreign)
            raise CustomCodeError(
                f"{path}: auto_map names custom code ({named}); this package never runs code from a model folder"
            )
        # This package's classes for another model_type: transformers would import the
        # folder's copies of its code files (which could be anything) instead of the package.
        if references and name == "config.json" and saved.get("model_type") not in own_model_types():
            raise CustomCodeError(
                f"{path}: auto_map names this package's classes for model_type {saved.get('model_type')!r}, not one "
                f"of its models ({', '.join(sorted(own_model_types()))}); this package never runs code from a model "
                "folder"
            )
        configured = {getattr(_OWN_CLASSES[ref], "model_type", None) for key, ref in references if key == "AutoConfig"}
        if name == "config.json" and configured and saved.get("model_type") not in configured:
            raise CustomCodeError(
                f"{path}: model_type {saved.get('model_type')!r} is not the model its auto_map names "
                f"({', '.join(sorted(map(str, configured)))}); the folder's config.json was edited"
            )
        tokenizer_class = saved.get("tokenizer_class")
        if tokenizer_class is not None and not (
            isinstance(tokenizer_class, str) and _shipped_tokenizer_class(tokenizer_class)
        ):
            raise CustomCodeError(
                f"{path}: tokenizer_class {tokenizer_class!r} is not a tokenizer class of transformers; "
                "this package never runs code from a model folder"
            )


class ContinuousPreTrainedModel(PreTrainedModel):
    """Base of the continuous models (the tagger's and the ODE-ResNet's pre-trained classes).

    Subclasses set ``config_class``, ``base_model_prefix`` and, where a processor goes
    with the model, ``image_processor_class``.
    """

    supports_gradient_checkpointing = True
    image_processor_class: type | None = None
    card_text = None  # what its model card says (a model_card.CardText; None: the generic card)

    def saved_pipeline(self) -> tuple[str, type] | None:
        """(task, pipeline class) that a saved folder names in ``config.json``'s
        ``custom_pipelines`` and carries the code of, for remote code; None for none (a
        subclass with a pipeline of its own says so: the tagger's)."""
        return None

    def saved_processor(self) -> type | None:
        """The processor class (a ``ProcessorMixin``) that a saved folder names in
        ``processor_config.json`` for ``AutoProcessor`` and carries the code of; None for
        none (the tagger has one)."""
        return None

    def num_parameters_split(self) -> dict[str, int]:
        """Parameter counts: ``embedding`` (word and learned position embeddings),
        ``non_embedding`` (the ODE blocks' coefficients and every other layer: the part
        compression acts on) and ``total``."""
        total = self.num_parameters()
        non_embedding = self.num_parameters(exclude_embeddings=True)
        return {"embedding": total - non_embedding, "non_embedding": non_embedding, "total": total}

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path, *args, **kwargs):
        """``PreTrainedModel.from_pretrained``, with one-line errors naming a weights file
        that does not load, and refusing non-finite or outsized weights and weights that
        are not the model's (see the module docstring).

        Raises ``OSError`` naming the damaged file, ``ValueError`` naming the folder and
        the first tensor that is non-finite, outsized, missing, unexpected or of another
        shape than the config gives.
        """
        try:
            model = super().from_pretrained(pretrained_model_name_or_path, *args, **kwargs)
        except Exception as err:
            damaged = unreadable_weights(pretrained_model_name_or_path)
            if damaged is None:
                raise
            path, reason = damaged
            raise OSError(f"{path}: cannot be loaded: {reason}") from err
        check_finite(model, pretrained_model_name_or_path)
        check_buffers(model, pretrained_model_name_or_path)
        return model

    @classmethod
    def _load_pretrained_model(cls, model, state_dict, checkpoint_files, load_config):
        """transformers' reading of the weights, after :func:`check_config_record`: a config
        that is not the one the weights were saved with is refused before they are read."""
        check_config_record(model.config, checkpoint_files, load_config.pretrained_model_name_or_path)
        return super()._load_pretrained_model(model, state_dict, checkpoint_files, load_config)

    @classmethod
    def _finalize_model_loading(cls, model, load_config, loading_info):
        """Refuse weights that are not the model's: a tensor missing or unexpected
        (:func:`loading_problem`), coefficients whose shapes disagree with the config, or
        any other tensor of another shape (unless ``ignore_mismatched_sizes``).

        transformers would initialise missing tensors afresh, drop unexpected ones, re-draw
        mismatched ones (with ``ignore_mismatched_sizes``) or fail with a generic message,
        after a table; a K-mismatch means the config does not describe the saved basis, so
        say that. This is transformers' step between reading the weights and initialising
        the missing or mismatched ones.
        """
        source = load_config.pretrained_model_name_or_path
        problem = loading_problem(model, loading_info)
        kind = kind_problem(getattr(model.config, "architectures", None), cls.__name__)
        if problem is not None and kind is not None:
            raise ValueError(f"{source} {kind}")
        if problem is not None:
            raise ValueError(f"{source}: {problem}; the weights and config.json of a model folder belong together")
        blocks = [name for name, m in model.named_modules() if isinstance(m, OdeBlock)]
        mismatched = sorted(
            (key, tuple(saved), tuple(expected))
            for key, saved, expected in loading_info.mismatched_keys
            if any(key.startswith(f"{block}.rate.") for block in blocks)
        )
        if mismatched:
            key, saved, expected = mismatched[0]
            config = model.config
            raise ValueError(
                f"checkpoint {load_config.pretrained_model_name_or_path!s} disagrees with its config: "
                f"coefficients {key} have shape {list(saved)}, but the config (basis={config.basis!r}, "
                f"num_basis={config.num_basis}) gives {list(expected)} ({len(mismatched)} tensors "
                "differ). The config must describe the saved basis: after change_basis / refine, "
                "save the model with save_pretrained, which writes the updated config."
            )
        if loading_info.mismatched_keys and not load_config.ignore_mismatched_sizes:
            key, saved, expected = min((k, tuple(s), tuple(e)) for k, s, e in loading_info.mismatched_keys)
            raise ValueError(
                f"{source}: tensor {key} has shape {list(saved)} in the weights, but config.json gives "
                f"{list(expected)}; the weights and config.json of a model folder belong together"
            )
        return super()._finalize_model_loading(model, load_config, loading_info)

    def save_pretrained(self, save_directory: str | Path, *args, regenerate_model_card: bool = False, **kwargs) -> None:
        """``PreTrainedModel.save_pretrained``, with the whole ``auto_map``, the model's
        pipeline and a model card.

        A model with a :meth:`saved_pipeline` (the tagger: ``pipeline_cont_transformer.py``)
        names it in ``config.json``'s ``custom_pipelines`` and the folder gets its code, so
        ``pipeline(model=folder, trust_remote_code=True)`` runs it. ``README.md`` states the
        basis, K, N_T, scheme and parameter counts, and the facts the config keeps
        (``config.model_card``: language, licence, data, results); a card the user wrote (or
        edited) is kept unless ``regenerate_model_card``. Every save writes the same folder:
        this package's, transformers' ``Trainer.save_model``, and remote code's copy of this
        file, where the package is not installed.
        """
        pipeline = self.saved_pipeline() if self._auto_class is not None else None
        processor = self.saved_processor() if self._auto_class is not None else None
        if self._auto_class is not None:  # registered for remote code (importing the package does it)
            auto_map = dict(getattr(self.config, "auto_map", None) or {})
            auto_map["AutoModel"] = class_reference(type(self.base_model))
            if self.image_processor_class is not None:
                auto_map["AutoImageProcessor"] = class_reference(self.image_processor_class)
            self.config.auto_map = auto_map
        if pipeline is not None:
            task, pipeline_class = pipeline
            self.config.custom_pipelines = {
                task: {"impl": class_reference(pipeline_class), "pt": [self._auto_class], "type": "text"}
            }
        super().save_pretrained(save_directory, *args, **kwargs)
        if kwargs.get("is_main_process", True):
            record_config(self.config, save_directory)  # config.json's fields, in the weights
            if pipeline is not None:  # the pipeline's file and the files it imports, flat
                custom_object_save(pipeline[1], save_directory)
            if processor is not None:  # the processor's file, and what AutoProcessor reads
                custom_object_save(processor, save_directory)
                saved = {
                    "processor_class": processor.__name__,
                    "auto_map": {"AutoProcessor": class_reference(processor)},
                }
                replace_file(Path(save_directory, PROCESSOR_FILE), json.dumps(saved, indent=2) + "\n")
            write_model_card(self, save_directory, overwrite=regenerate_model_card)


__all__ = [
    "MAX_ABS_WEIGHT",
    "ContinuousPreTrainedModel",
    "CustomCodeError",
    "check_buffers",
    "check_config_record",
    "check_finite",
    "check_model_kind",
    "check_no_custom_code",
    "class_reference",
    "inference_dtype",
    "is_own_class",
    "load_error",
    "loading_problem",
    "native_bfloat16",
    "own_model_types",
    "register_own_class",
    "unreadable_weights",
]
