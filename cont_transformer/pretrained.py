"""What every model of this package adds to ``PreTrainedModel``.

* Complete Hub folders: ``save_pretrained`` writes, besides what transformers writes
  (weights, config, the model code with the ``auto_map`` entry of the task class), the
  ``auto_map`` entries of the base model (``AutoModel``) and, for a model with one, of
  its image processor (``AutoImageProcessor``), so every Auto class and ``pipeline``
  load the folder with ``trust_remote_code=True``; and a model card
  (:func:`~cont_transformer.model_card.write_model_card`) unless the folder holds one
  the user wrote.
* Parameter counts split into embedding and non-embedding parameters (compression acts
  on the latter).
* A checkpoint whose coefficient shapes disagree with its config is refused by name.
* Activation checkpointing: ``gradient_checkpointing_enable()`` (transformers 5 also
  spells it ``activation_checkpointing_enable()``) sets it on every ODE block, which
  then checkpoints each integration step.
"""

from __future__ import annotations

from pathlib import Path

from transformers import PreTrainedModel

from .model_card import write_model_card
from .ode_block import OdeBlock


def class_reference(cls: type) -> str:
    """``"module.Class"``, as an ``auto_map`` names a class of a folder's code files."""
    return f"{cls.__module__.rsplit('.', 1)[-1]}.{cls.__name__}"


class ContinuousPreTrainedModel(PreTrainedModel):
    """Base of the continuous models (the tagger's and the ODE-ResNet's pre-trained classes).

    Subclasses set ``config_class``, ``base_model_prefix`` and, where a processor goes
    with the model, ``image_processor_class``.
    """

    supports_gradient_checkpointing = True
    image_processor_class: type | None = None

    def num_parameters_split(self) -> dict[str, int]:
        """Parameter counts: ``embedding`` (word and learned position embeddings),
        ``non_embedding`` (the ODE blocks' coefficients and every other layer: the part
        compression acts on) and ``total``."""
        total = self.num_parameters()
        non_embedding = self.num_parameters(exclude_embeddings=True)
        return {"embedding": total - non_embedding, "non_embedding": non_embedding, "total": total}

    @classmethod
    def _finalize_model_loading(cls, model, load_config, loading_info):
        """Refuse a checkpoint whose coefficient shapes disagree with its config.

        transformers would re-draw mismatched tensors (with ``ignore_mismatched_sizes``)
        or fail with a generic message; a K-mismatch means the config does not describe
        the saved basis, so say that. This is transformers' step between reading the
        weights and initialising the missing or mismatched ones.
        """
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
        return super()._finalize_model_loading(model, load_config, loading_info)

    def save_pretrained(
        self, save_directory: str | Path, *args, regenerate_model_card: bool = False, **kwargs
    ) -> None:
        """``PreTrainedModel.save_pretrained``, with the whole ``auto_map`` and a model card.

        ``README.md`` states the basis, K, N_T, scheme and parameter counts; a card the
        user wrote (or edited) is kept unless ``regenerate_model_card``.
        """
        if self._auto_class is not None:  # registered for remote code (importing the package does it)
            auto_map = dict(getattr(self.config, "auto_map", None) or {})
            auto_map["AutoModel"] = class_reference(type(self.base_model))
            if self.image_processor_class is not None:
                auto_map["AutoImageProcessor"] = class_reference(self.image_processor_class)
            self.config.auto_map = auto_map
        super().save_pretrained(save_directory, *args, **kwargs)
        if kwargs.get("is_main_process", True):
            write_model_card(self, save_directory, overwrite=regenerate_model_card)


__all__ = ["ContinuousPreTrainedModel", "class_reference"]
