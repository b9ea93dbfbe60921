"""Raw text to UD-style sentences of words, with character offsets, in any language: the
one segmenter of the tagger.

``Tagger`` and ``tag.py`` and the pipeline a saved
folder carries (``pipeline_cont_transformer.py``) split raw text here, so they give the
same words and sentences; a saved tokenizer's pre-tokenizer (``text/tokenization.py``)
is this module's word rule for English. It sits at the top of the package and imports
only ``tokenizers``, so remote code copies it with the pipeline. Its rules were measured
against spaCy's rule-based tokenizer and sentencizer on the UD English-GUM and German-GSD
dev texts (``benchmarks/segmenters.py``; docs/experiments.md, "Tagging text").

Languages. ``language`` is an ISO 639 code (``en``, ``fr``, ``grc``; a region or script
after it is allowed: ``pt-BR``, ``zh_Hant``). English and German have tuned rules (the
primary code selects them: ``en-GB`` is English, and so are ``eng`` and ``eng-GB``, three-letter
codes taking their language's two-letter rules); every other code gets the generic
Unicode rules (:data:`TUNED_LANGUAGES`; ``und``, undetermined, names them on purpose):

* Generic words: runs of letters (with their marks) and digits, as Unicode's word
  boundaries find them; every punctuation mark its own word; URLs, e-mail addresses,
  numbers with separators (``3.5``, ``1,000``, ``12:30``), letter-dot abbreviations
  (``U.S.``, ``EE.UU.``) and initials (``J.``) whole; letters joined by a
  hyphen or an apostrophe stay one word (``peut-être``, ``aujourd'hui``), except a short
  elided article or pronoun (one or two letters and an apostrophe before a letter:
  ``l'homme`` -> ``l'`` ``homme``, ``qu'il``, as the French, Italian and Catalan
  treebanks write them); a run of dots or dashes whole (``...``). No multiword tokens.
  Writing without spaces is not split into its words (that needs a dictionary): each Han
  and Hiragana character is a word of its own and a Katakana run one word (Chinese,
  Japanese), and a Thai, Lao, Khmer or Myanmar run between spaces is one word (a phrase);
  give such text already segmented (``--input-format tokens`` or ``conllu``) to tag its
  real words.

* Words (tuned). One regular expression per language (:func:`word_pattern`, Oniguruma, the
  engine of ``tokenizers``), applied to a whole paragraph so a rule may look past the
  next space: punctuation apart; English clitics split as the English treebanks split
  them (``didn't`` -> ``did n't``, ``Tom's`` -> ``Tom 's``, ``states'`` -> ``states '``,
  ``gonna`` -> ``gon na``, ``cannot`` -> ``can not``), hyphens and slashes between
  English words too (``native-like`` -> ``native - like``, as GUM writes them);
  abbreviations (``U.S.``, ``Mr.``, ``e.g.``, ``No. 5``, German ``z.B.``, ``bzw.``),
  German ordinals (``am 13. Mai``), numbers (``3.5``, ``1,000``), URLs, e-mail addresses,
  hashtags and emoticons whole. German hyphenated words stay whole, as German-GSD mostly
  writes them, and German fused forms (``zum`` = ``zu dem``) stay one word, as the
  German-HDT treebank tags them (``APPRART``).
* Paragraphs. A blank line always ends a sentence: the text is cut into paragraphs at
  blank lines and each is split on its own.
* Sentences (every language). A sentence ends after a word made only of terminal marks
  (``.``, ``!``, ``?``, ``…`` and other scripts' own: ``。！？``, ``؟``, ``।``, ``۔``,
  ``።``, ...), with the closing punctuation and a footnote mark after it (``."``,
  ``?!``, ``.)``, ``。」``, ``. [17]``); an opening quote or bracket after it (a space
  before it and none after, or an opening bracket such as ``「`` or ``（``) starts the next
  sentence, and so does the next word only when it does not begin with a lowercase
  letter (a script without case always begins one).
* Multiword tokens (tuned languages). A run of two or more words with no space between them, each made
  only of letters and apostrophes, is one multiword token (``didn't`` over ``did``,
  ``n't``), as UD writes such a run.

Every word is a span ``(start, end)`` of the input, and no word contains whitespace, so
the words and the whitespace between them rebuild the input exactly. A run of more than
:data:`LONGEST_WORD` visible characters (a data blob, a line of letters megabytes long) is
not given to the rules (Oniguruma gives up on such runs, and ``tokenizers`` then panics):
it is cut into words of that length.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import cache

from tokenizers import Regex, pre_tokenizers

TUNED_LANGUAGES = ("en", "de")  # the languages with rules of their own; any other code gets the generic rules
GENERIC = "und"  # ISO 639's "undetermined": a code that always names the generic rules
LONGEST_WORD = 1000  # a longer run of visible characters is cut into words of this length
_LANGUAGE_CODE = re.compile(r"[A-Za-z]{2,3}(?:[-_][A-Za-z0-9]{1,8})*")
# ISO 639-1's two-letter codes, each with the three-letter codes of the same language
# (ISO 639-2/T, 639-2/B, 639-3): "deu" and "ger" get the rules of "de".
_ISO_639_1 = """
aa:aar ab:abk ae:ave af:afr ak:aka am:amh an:arg ar:ara as:asm av:ava ay:aym az:aze ba:bak
be:bel bg:bul bh:bih bi:bis bm:bam bn:ben bo:bod/tib br:bre bs:bos ca:cat ce:che ch:cha co:cos
cr:cre cs:ces/cze cu:chu cv:chv cy:cym/wel da:dan de:deu/ger dv:div dz:dzo ee:ewe el:ell/gre
en:eng eo:epo es:spa et:est eu:baq/eus fa:fas/per ff:ful fi:fin fj:fij fo:fao fr:fra/fre fy:fry
ga:gle gd:gla gl:glg gn:grn gu:guj gv:glv ha:hau he:heb hi:hin ho:hmo hr:hrv ht:hat hu:hun
hy:arm/hye hz:her ia:ina id:ind ie:ile ig:ibo ii:iii ik:ipk io:ido is:ice/isl it:ita iu:iku
ja:jpn jv:jav ka:geo/kat kg:kon ki:kik kj:kua kk:kaz kl:kal km:khm kn:kan ko:kor kr:kau ks:kas
ku:kur kv:kom kw:cor ky:kir la:lat lb:ltz lg:lug li:lim ln:lin lo:lao lt:lit lu:lub lv:lav
mg:mlg mh:mah mi:mao/mri mk:mac/mkd ml:mal mn:mon mr:mar ms:may/msa mt:mlt my:bur/mya na:nau
nb:nob nd:nde ne:nep ng:ndo nl:dut/nld nn:nno no:nor nr:nbl nv:nav ny:nya oc:oci oj:oji om:orm
or:ori os:oss pa:pan pi:pli pl:pol ps:pus pt:por qu:que rm:roh rn:run ro:ron/rum ru:rus rw:kin
sa:san sc:srd sd:snd se:sme sg:sag sh:hbs si:sin sk:slk/slo sl:slv sm:smo sn:sna so:som
sq:alb/sqi sr:srp ss:ssw st:sot su:sun sv:swe sw:swa ta:tam te:tel tg:tgk th:tha ti:tir tk:tuk
tl:tgl tn:tsn to:ton tr:tur ts:tso tt:tat tw:twi ty:tah ug:uig uk:ukr ur:urd uz:uzb ve:ven
vi:vie vo:vol wa:wln wo:wol xh:xho yi:yid yo:yor za:zha zh:chi/zho zu:zul
"""
_TWO_LETTER = dict(entry.split(":") for entry in _ISO_639_1.split())
_THREE_TO_TWO = {three: two for two, threes in _TWO_LETTER.items() for three in threes.split("/")}

_W = r"[\p{L}\p{M}\p{N}]"  # a letter (with its marks) or digit
_L = r"[\p{L}\p{M}]"  # a letter
_ABBREVIATIONS = {
    "en": "Mr|Mrs|Ms|Dr|St|Jr|Sr|Prof|Mt|vs|etc|Inc|Ltd|Co|Corp|Vol|vol|Fig|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|"
    "Oct|Nov|Dec|Mon|Tue|Tues|Wed|Thu|Thurs|Fri|Sat|Sun|approx|ca|cf|al|Ave|Ed|eds|Eng|Gen|GEN|Gov|Rev|Sgt|Capt|"
    "Col|Lt|Cal|Fla|Conn|CONN|Mass|Calif|Ariz|Mlle|Mme|yr|yrs|div|comp|comps|refrig|Hum|Epis|Art|pp|ed|repr|trans",
    "de": "Dr|St|Nr|Str|Prof|bzw|ca|vgl|usw|etc|Std|Mio|Mrd|Tel|Az|Abs|Art|Hr|Fr|Frl|inkl|zzgl|ggf|evtl|ggü|insb|"
    "Jh|Jhd|Jan|Feb|Mär|Apr|Jun|Jul|Aug|Sept|Sep|Okt|Nov|Dez|geb|gest|allg|sog|Mo|Di|Mi|Do|Fr|Sa|So|Min|Sek|max|"
    "min|Co|Inc|Ltd|Corp|Mr|Mrs|Ms|vs|al",
}
_URL = r"(?:https?://|www\.)[^\s<>\"]*[^\s<>\".,;:!?)\]'’]|[\w.+-]+@[\w-]+(?:\.[\w-]+)+"
_EMOTICON = rf"(?<![\S&&[^(]])[:;=][-^o']?[)(\]\[DPpO/\\|*]+(?!{_W})"
_ENGLISH_CLITICS = [
    rf"{_W}+(?=(?i:n['’]t)(?!{_W}))",  # did | n't, ca | n't
    rf"(?i:n['’]t)(?!{_W})",
    rf"{_W}+(?=['’](?i:s|re|ll|ve|m|d)(?!{_W}))",  # Tom | 's, I | 'm
    rf"['’](?i:s|re|ll|ve|m|d)(?!{_W})",
    rf"{_L}+[sS](?=['’](?!{_W}))",  # states | '
    rf"(?<!{_W})(?i:gon|wan)(?=(?i:na)(?!{_W}))",  # gon | na, wan | na
    rf"(?<!{_W})(?i:got)(?=(?i:ta)(?!{_W}))",  # got | ta
    rf"(?<!{_W})(?i:can)(?=(?i:not)(?!{_W}))",  # can | not
    rf"['’]\d0s(?!{_W})",  # ’70s
    rf"(?<!{_W})(?i:pre|non|pro|re|e)-{_L}+",  # pre-war, e-mail
    rf"{_W}+-(?!\S)",  # a word broken off: th- (speech)
]
_WORD = {
    # English splits hyphens and slashes between words (GUM writes native - like, and / or).
    "en": rf"[#@]?{_W}+(?:[.,:]{_W}+|['’&_+]{_L}+)*",
    # German keeps hyphenated words and truncations whole (Asien-Pazifik-Gipfel, Spa-).
    "de": rf"[#@]?{_W}+(?:[-'’.,:/&_@+]{_W}+)*-?",
}


_SPACELESS = r"\p{Han}\p{Hiragana}\p{Katakana}ー"  # scripts written without spaces, split apart
_GENERIC_W = rf"[{_W[1:-1]}&&[^{_SPACELESS}]]"  # a letter or digit of a script written with spaces
_ABBREVIATION = r"\p{L}{1,2}\.(?:\p{L}{1,2}\.)+"  # U.S., e.g., Ph.D., z.B., EE.UU.
_INITIAL = rf"(?<!{_W})\p{{Lu}}\.(?!{_W})"  # J. Smith
_GENERIC = [
    _URL,
    _ABBREVIATION,
    _INITIAL,
    r"\p{N}+(?:[.,:/]\p{N}+)+",  # 3.5, 1,000, 12:30
    rf"(?<!{_W})\p{{L}}{{1,2}}['’](?=\p{{L}})",  # l'homme, qu'il: the elided word apart
    r"[\p{Han}\p{Hiragana}]",  # Chinese and Japanese: a character each
    r"[\p{Katakana}ー]+",
    rf"{_GENERIC_W}+(?:[-'’_]{_GENERIC_W}+)*",  # peut-être, aujourd'hui
    r"\.{2,}|-{2,}|\S",
]


def rules(language: str) -> str:
    """Whose rules split ``language``'s text: ``"en"`` or ``"de"`` (the primary code of
    ``language`` has tuned rules), else :data:`GENERIC`."""
    primary = primary_language(language)
    return primary if primary in TUNED_LANGUAGES else GENERIC


def primary_language(language: str) -> str:
    """The primary code of ``language``, lowercase, as two letters where ISO 639-1 has them
    (``eng``, ``en-GB`` -> ``en``; ``grc`` stays)."""
    primary = re.split(r"[-_]", check_language(language))[0].lower()
    return _THREE_TO_TWO.get(primary, primary)


@cache
def word_pattern(language: str) -> str:
    """The regular expression (Oniguruma) whose matches are the words of ``language``'s
    text; whitespace and anything it does not match are not words (module docstring)."""
    language = rules(language)
    if language == GENERIC:
        return "|".join(_GENERIC)
    alternatives = [
        _URL,
        _EMOTICON,
        _ABBREVIATION,
        _INITIAL,
        rf"(?<!{_W})(?:{_ABBREVIATIONS[language]})\.",  # Mr., etc., bzw.
        rf"(?<!{_W})(?i:no|c|p|pp)\.(?=\s*\d)",  # No. 5, c. 1900, p. 3
    ]
    if language == "en":
        alternatives += _ENGLISH_CLITICS
    else:
        alternatives.append(rf"(?<![\w.])\d{{1,2}}\.(?=[^\S\n]+{_W})")  # am 13. Mai
        alternatives.append(rf"['’]s(?!{_W})")  # geht 's
    alternatives += [_WORD[language], r"``|''|\.{2,}|-{2,}|\S"]  # ..., --, `` and any other character alone
    return "|".join(alternatives)


def word_pre_tokenizer(language: str = "en") -> pre_tokenizers.PreTokenizer:
    """:func:`word_pattern` as a new ``tokenizers`` pre-tokenizer (whitespace dropped): the
    one a saved tokenizer carries. The pattern sees the whole text, so a rule may look past
    a space (``No. 5``); ``pre_tokenize_str(text)`` gives each word with its ``(start, end)``."""
    return pre_tokenizers.Sequence(
        [pre_tokenizers.Split(Regex(word_pattern(language)), behavior="isolated"), pre_tokenizers.WhitespaceSplit()]
    )


@cache
def word_splitter(language: str = "en") -> pre_tokenizers.PreTokenizer:
    """``language``'s :func:`word_pre_tokenizer`, built once, for splitting text here."""
    return word_pre_tokenizer(language)


_LONG_RUN = re.compile(rf"\S{{{LONGEST_WORD + 1},}}")
_PARAGRAPH_BREAK = re.compile(r"\n[^\S\n]*\n\s*")  # a blank line (and what follows it)
_NON_SPACE = re.compile(r"\S+")
_CLITIC_PIECE = re.compile(r"[^\W\d_'’]*['’]?[^\W\d_'’]*")  # letters, at most one apostrophe
# A word made only of these ends a sentence: Latin, Greek and Cyrillic, CJK (full and half
# width), Arabic, Urdu, Devanagari and Bengali, Armenian, Ethiopic, Myanmar, Tibetan, Mongolian.
_SENTENCE_END = re.compile(r"[.!?…‼⁇⁈⁉。！？｡．؟۔।॥։።፧။།᠃᠉]+")
_FOOTNOTE = re.compile(r"\d+|\.+|…")


@dataclass
class Sentence:
    """One sentence of a text.

    Attributes:
        spans: ``(start, end)`` of each word in the text (``text[start:end]`` is its form).
        multiword: ``first -> end`` word indices of each multiword token, words
            ``first .. end - 1`` (usually empty).
        paragraph_start: the sentence begins a paragraph.
        forms: word index -> its form, for a word of a multiword token that is not a piece
            of the text (Greek ``στο`` = ``σε`` ``το``, from a learned segmenter); such a
            word spans its whole token. Empty from the rules.
    """

    spans: list[tuple[int, int]]
    multiword: dict[int, int] = field(default_factory=dict)
    paragraph_start: bool = False
    forms: dict[int, str] = field(default_factory=dict)

    def words(self, text: str) -> list[str]:
        """The form of each word: ``text[start:end]``, or its entry in :attr:`forms`."""
        return [self.forms.get(i, text[start:end]) for i, (start, end) in enumerate(self.spans)]


def check_language(language: str) -> str:
    """``language`` if it is an ISO 639 code (two or three letters, then optionally a
    region or script: ``fr``, ``grc``, ``pt-BR``; two letters must be ISO 639-1's);
    ``ValueError`` naming it otherwise."""
    if not isinstance(language, str) or _LANGUAGE_CODE.fullmatch(language) is None:
        raise ValueError(
            f"language: {language!r} is not a language code (ISO 639: two or three letters, "
            "optionally a region or script after '-': en, fr, grc, pt-BR)"
        )
    primary = re.split(r"[-_]", language)[0].lower()
    if len(primary) == 2 and primary not in _TWO_LETTER:
        raise ValueError(
            f"language: {language!r} is no ISO 639 language ({primary!r} is not a two-letter code of "
            "ISO 639-1); give its code (en, fr, eng, grc) or und for any language"
        )
    return language


def paragraphs(text: str) -> Iterator[tuple[int, str]]:
    """``(offset, paragraph)`` of each paragraph of ``text`` that is not blank."""
    start = 0
    for match in _PARAGRAPH_BREAK.finditer(text):
        if text[start : match.start()].strip():
            yield start, text[start : match.start()]
        start = match.end()
    if text[start:].strip():
        yield start, text[start:]


def _word_spans(text: str, language: str) -> list[tuple[int, int]]:
    """The words of ``text`` by ``language``'s rules; a run of more than
    :data:`LONGEST_WORD` visible characters cut into words of that length instead."""
    splitter, spans, start = word_splitter(rules(language)), [], 0
    for run in _LONG_RUN.finditer(text):
        spans += [(start + a, start + b) for _, (a, b) in splitter.pre_tokenize_str(text[start : run.start()])]
        spans += [(i, min(i + LONGEST_WORD, run.end())) for i in range(run.start(), run.end(), LONGEST_WORD)]
        start = run.end()
    spans += [(start + a, start + b) for _, (a, b) in splitter.pre_tokenize_str(text[start:])]
    return spans


def _footnote(text: str, spans: list[tuple[int, int]], i: int) -> bool:
    """Words ``i .. i + 2`` are a footnote mark: ``[17]``, ``[...]``."""
    marks = [text[start:end] for start, end in spans[i : i + 3]]
    return len(marks) == 3 and marks[0] == "[" and marks[2] == "]" and _FOOTNOTE.fullmatch(marks[1]) is not None


def _opening(word: str) -> bool:
    """``word`` is made of opening brackets (``(``, ``「``, ``„``: Unicode's Ps)."""
    return all(unicodedata.category(c) == "Ps" for c in word)


def _sentence_bounds(text: str, spans: list[tuple[int, int]]) -> Iterator[tuple[int, int]]:
    """``(first, end)`` word indices of each sentence of one paragraph (module docstring)."""
    begin, ended, keep = 0, False, 0
    for i, (start, end) in enumerate(spans):
        word = text[start:end]
        if ended and i > begin:
            keep = 3 if keep <= 0 and _footnote(text, spans, i) else keep - 1
            gap = start > spans[i - 1][1]
            opener = (gap and end < len(text) and not text[end].isspace()) or _opening(word)
            closing = keep > 0 or (not any(c.isalnum() for c in word) and not opener)
            if not closing and not word[0].islower():
                yield begin, i
                begin = i
            ended = ended and closing
        ended = ended or _SENTENCE_END.fullmatch(word) is not None
    if begin < len(spans):
        yield begin, len(spans)


def _multiword(text: str, spans: list[tuple[int, int]]) -> dict[int, int]:
    """``first -> end`` of each run of clitic pieces written together (module docstring)."""
    multiword, run_start, clitic = {}, None, False
    for i, (start, end) in enumerate(spans):
        joins = clitic and spans[i - 1][1] == start
        clitic = _CLITIC_PIECE.fullmatch(text, start, end) is not None
        if joins and clitic:
            run_start = i - 1 if run_start is None else run_start
            multiword[run_start] = i + 1
        else:
            run_start = None
    return multiword


def _sentence(text: str, spans: list[tuple[int, int]], offset: int, language: str) -> Sentence:
    multiword = {} if rules(language) == GENERIC else _multiword(text, spans)
    return Sentence([(offset + start, offset + end) for start, end in spans], multiword)


def split_text(text: str, language: str = "en") -> Iterator[Sentence]:
    """The sentences of raw ``text`` (paragraphs at blank lines, then the sentence rules),
    lazily.

    Example::

        [s.words(text) for s in split_text(text := "I don't know. He left.")]
        # [['I', 'do', "n't", 'know', '.'], ['He', 'left', '.']]
    """
    check_language(language)
    for offset, paragraph in paragraphs(text):
        spans = _word_spans(paragraph, language)
        for number, (begin, end) in enumerate(_sentence_bounds(paragraph, spans)):
            sentence = _sentence(paragraph, spans[begin:end], offset, language)
            sentence.paragraph_start = number == 0
            yield sentence


def tokenize_sentences(
    sentences: Iterable[str], language: str = "en", offsets: Iterable[int] | None = None
) -> Iterator[Sentence]:
    """Each string as one sentence (no sentence splitting), split into words, lazily.

    ``offsets`` gives where each string starts in a larger text (default 0), for spans
    into that text.
    """
    check_language(language)
    sentences = list(sentences)
    offsets = [0] * len(sentences) if offsets is None else list(offsets)
    for offset, sentence in zip(offsets, sentences):
        yield _sentence(sentence, _word_spans(sentence, language), offset, language)


def whitespace_sentences(lines: Iterable[str], offsets: Iterable[int] | None = None) -> Iterator[Sentence]:
    """Each string as one sentence of whitespace-separated words (already tokenized)."""
    lines = list(lines)
    offsets = [0] * len(lines) if offsets is None else list(offsets)
    for offset, line in zip(offsets, lines):
        yield Sentence([(offset + m.start(), offset + m.end()) for m in _NON_SPACE.finditer(line)])


__all__ = [
    "GENERIC",
    "LONGEST_WORD",
    "TUNED_LANGUAGES",
    "Sentence",
    "check_language",
    "paragraphs",
    "primary_language",
    "rules",
    "split_text",
    "tokenize_sentences",
    "whitespace_sentences",
    "word_pattern",
    "word_pre_tokenizer",
    "word_splitter",
]
