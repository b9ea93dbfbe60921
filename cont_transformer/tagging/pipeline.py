"""One entry per word from transformers' ``token-classification`` pipeline.

What the plain pipeline does with a tagger of this package:

* ``aggregation_strategy="none"`` (the default): one entry per token. A word of the
  training vocabulary is one token; an unknown word is several pieces (the spelling
  tokenizer), each its own entry.
* ``aggregation_strategy="first"`` (or ``"average"``, ``"max"``): the pieces of a word
  are joined into one word (the tokenizer is word aware: continuation pieces carry the
  ``"##"`` prefix) and tagged with its first piece's tag, as the tagger trains. Then
  transformers groups *neighbouring words with the same label* into one entity (its
  named-entity convention: ``("big old", "JJ")``), and cuts a label at its first ``-``
  (``-LRB-`` becomes ``LRB-``). The same happens for ``is_split_into_words=True`` input:
  its word ids only place the pieces in the sentence.

For part-of-speech tags neither grouping is wanted, so :class:`WordTaggingPipeline`
keeps the word aggregation and drops the entity grouping: one entry per word, with its
whole tag::

    from transformers import pipeline
    from cont_transformer.tagging.pipeline import WordTaggingPipeline

    tagger = pipeline("token-classification", model="runs/pos", aggregation_strategy="first",
                      pipeline_class=WordTaggingPipeline)
    [(e["word"], e["entity_group"]) for e in tagger("The big old dog barks.")]
    # [('The', 'DT'), ('big', 'JJ'), ('old', 'JJ'), ('dog', 'NN'), ('barks', 'VBZ'), ('.', '.')]

That is the primary column only. Every column per word (UPOS, XPOS, FEATS, lemma) comes
from the pipeline a saved tagger carries, ``pipeline(model=folder, trust_remote_code=True)``
(``cont_transformer/pipeline_cont_transformer.py``).
"""

from __future__ import annotations

from transformers import TokenClassificationPipeline


class WordTaggingPipeline(TokenClassificationPipeline):
    """``token-classification`` with one entry per word (module docstring): the words of
    ``aggregation_strategy`` ``first``, ``average`` or ``max``, never grouped together."""

    def group_entities(self, entities: list[dict]) -> list[dict]:
        return [self.group_sub_entities([entity]) for entity in entities]

    def group_sub_entities(self, entities: list[dict]) -> dict:
        group = super().group_sub_entities(entities)
        group["entity_group"] = entities[0]["entity"]  # the whole label ("-LRB-")
        return group
