"""What both text applications stand on: the tagger (``tagging/``) and the language model
(``language_modeling/``) never import each other, only this layer.

:mod:`.tokenization` (a tokenizer built from words, encoding words, checking a saved
tokenizer), :mod:`.batching` (token batches, padding, length-grouped epochs, evaluation
windows), :mod:`.optimization` (the optimiser's parameter groups), :mod:`.arguments` (the
encoder's sizes, its config fields, keeping a saved model's continuous choices),
:mod:`.pretrained_encoder` (reading a language model's folder, starting from its encoder),
:mod:`.word_vectors` (the static word vectors' files), :mod:`.reading` (plain or gzip
text files) and :mod:`.streams` (text read as it arrives, a pipe's pauses marked).
"""
