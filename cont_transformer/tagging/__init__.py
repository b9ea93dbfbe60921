"""The tagging application: CoNLL-U data, the tagger's training, and tagging text.

Data: :mod:`.data` (CoNLL-U treebanks as ``datasets``, UD treebank codes and their
release folders, a treebank's facts and licence), :mod:`.sample_treebank` (the generated
sample). Columns: :mod:`.columns` (which CoNLL-U columns a treebank annotates, their
labels, ids and back, the lemma lexicon of the train sentences; lemmas themselves, learned
and applied, are the package root's ``lemmas.py``), :mod:`.combinations` (the UPOS, XPOS
and FEATS combinations decoded jointly). Training:
:mod:`.arguments` (``TrainingArguments``, presets, the schedule fitted to a treebank),
:mod:`.starts` (the ways a tagger starts: new, from a language model, fine-tuned),
:mod:`.trainer` (``PosTrainer``, ``train``), :mod:`.evaluation` (dev scores, saved models),
:mod:`.self_training` (a teacher's tags of unlabelled text), :mod:`.segmenter_training`
(a segmenter learned from the treebank, saved beside the tagger). Tagging text:
:mod:`.tag` (``tag()``, ``Tagger``), :mod:`.words` (the words and columns of a tagged
sentence), :mod:`.document` (what tagging returns: ``Document``, in stanza's shape),
:mod:`.conllu_document` (CoNLL-U line for line), :mod:`.tag_files` (files in and out,
behind ``scripts/tag.py``), :mod:`.tag_command` (``tag.py``'s flags and run),
:mod:`.dataset_tagging` (``TagTexts``, for Ray Data and ``datasets.map``) and
:mod:`.scoring` (the CoNLL 2018 scores, by the local `evaluate` module
:mod:`.metrics.conll18`). :mod:`.family` registers the tagger with the tools.

Built on the core (bases, integrators, ``OdeBlock``), the continuous transformer model,
the text layer (:mod:`cont_transformer.text`) and the training scaffold
(:mod:`cont_transformer.training`); the tools (:mod:`cont_transformer.tools`) build on it,
never the other way round.
"""
