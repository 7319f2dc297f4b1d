"""The language identifier from the decompressed cache guesses exactly as py3langid's own load."""

from __future__ import annotations

import pytest
from py3langid.langid import MODEL_FILE, LanguageIdentifier

from stream.adapters.compaction import cues, langid_model

pytestmark = pytest.mark.unit

LINES = [
    "ne touche pas à la base de données s'il te plaît", "no quiero que cambies la configuración del servidor",
    "bitte nicht die Datenbank löschen und nichts pushen", "não mexa nos arquivos de configuração por favor",
    "non toccare il file di configurazione", "niet de database aanpassen alsjeblieft", "keep it local please",
    "Map event token data", "nie zmieniaj tego pliku", "bu dosyayı değiştirme lütfen", "ÄÖÜ ß é è ê ñ ç", "x",
]


@pytest.fixture(scope="module")
def reference():
    ident = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
    ident.set_languages(list(cues._LATIN))
    return ident


def test_the_cached_identifier_guesses_exactly_as_py3langids_own_load(tmp_path, reference):
    built = langid_model.load_identifier(cues._LATIN, tmp_path)
    [cached_file] = tmp_path.iterdir()
    cached = langid_model.load_identifier(cues._LATIN, tmp_path)
    assert cached_file.name == langid_model.cache_path(cues._LATIN, tmp_path).name
    for line in LINES:
        assert built.classify(line) == cached.classify(line) == reference.classify(line), line
        assert cached.rank(line) == reference.rank(line), line


def test_a_damaged_cache_is_not_used_and_is_written_again(tmp_path, reference):
    langid_model.load_identifier(cues._LATIN, tmp_path)
    path = langid_model.cache_path(cues._LATIN, tmp_path)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF  # one flipped byte in the payload
    path.write_bytes(bytes(data))
    assert langid_model._decode(path.read_bytes()) is None
    ident = langid_model.load_identifier(cues._LATIN, tmp_path)
    assert [ident.classify(x) for x in LINES] == [reference.classify(x) for x in LINES]
    assert langid_model._decode(path.read_bytes()) is not None
    path.write_bytes(path.read_bytes()[:1000])  # a cut one too
    assert langid_model._decode(path.read_bytes()) is None


def test_a_cache_dir_that_cannot_be_made_still_gives_the_same_guesses(tmp_path, reference):
    (tmp_path / "a-file").write_bytes(b"")
    ident = langid_model.load_identifier(cues._LATIN, tmp_path / "a-file" / "langid")
    assert [ident.classify(x) for x in LINES] == [reference.classify(x) for x in LINES]


def test_a_cache_file_is_named_by_the_model_it_was_made_from(tmp_path):
    other = tmp_path / "model.npz.xz"
    other.write_bytes(b"another model")
    assert langid_model.cache_path(cues._LATIN, tmp_path, other) != langid_model.cache_path(cues._LATIN, tmp_path)
    assert langid_model.cache_path(("en", "fr"), tmp_path) != langid_model.cache_path(cues._LATIN, tmp_path)
