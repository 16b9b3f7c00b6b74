"""jitvm's own test corpus: the programs in mlir/ and vmasm/ next to this file.

The builder, the directive format and the cache are jitvm.fuzz.corpus; this binds them to
this directory so tests (and bench, which names the same directory) share one corpus.
"""

from __future__ import annotations

from pathlib import Path

from jitvm.fuzz.corpus import Corpus

CORPUS_DIR = Path(__file__).resolve().parent
CORPUS = Corpus(CORPUS_DIR)

build_corpus = CORPUS.build
source_files = CORPUS.source_files

__all__ = ["CORPUS", "CORPUS_DIR", "build_corpus", "source_files"]
