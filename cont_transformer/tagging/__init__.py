"""The tagging application: CoNLL-U data, batching, the tagger's training and tagging text.

Data: :mod:`.data` (CoNLL-U treebanks as ``datasets``), :mod:`.sample_treebank` (the
generated sample), :mod:`.tokenization` (the model's vocabulary and spelling tables),
:mod:`.batching`. Columns: :mod:`.columns` (which CoNLL-U columns a treebank annotates,
their labels, ids and back) and :mod:`.lemmas` (lemmas as edit scripts learnt from the
treebank). Training: :mod:`.arguments` (``TrainingArguments``, presets),
:mod:`.optimization` (AdamW), :mod:`.evaluation` (accuracy, saved models), :mod:`.trainer`
(``PosTrainer``, ``train``). Tagging text: :mod:`.segmentation` (raw text to sentences of
UD words), :mod:`.tag` (``tag()``, ``Tagger``), :mod:`.document` (what tagging returns:
``Document``, in stanza's shape), :mod:`.tag_files` (files in and out, behind
``scripts/tag.py``), :mod:`.conllu_document` (CoNLL-U line for line) and :mod:`.scoring`
(the CoNLL 2018 scores, by the local `evaluate` module :mod:`.metrics.conll18`).

Built on the core (bases, integrators, ``OdeBlock``), the continuous transformer model
and the training scaffold (:mod:`cont_transformer.training`); the tools
(:mod:`cont_transformer.tools`) build on it, never the other way round.
"""
