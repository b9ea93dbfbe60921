"""Pretraining the continuous transformer encoder as a masked language model on unlabelled
text (``scripts/pretrain.py``), the encoder that taggers are then fine-tuned from
(``train_pos.py --model-name-or-path``; docs/design.md §6)."""
