"""The ``rules`` judge: named cues, the precision levels, other languages, structural carry (issue 22).

Every sentence here was written for these tests (no real transcript). Each kind of the issue's
misses and false alarms has a test of the kind and of its near miss.
"""

from __future__ import annotations

import pytest

from stream.adapters import cues
from stream.adapters.judge import Candidate
from stream.adapters.judge_rules import RulesJudge, quoted_share, _summary
from stream.adapters.prohibitions import ProhibitionMatcher

pytestmark = pytest.mark.unit


def read(text: str, channel: str = "typed", precision: str = "recall") -> list[tuple[str, str, str]]:
    judge = RulesJudge(precision=precision)
    return [(i.text, i.form, i.cue) for i, _ in judge.instructions(Candidate("c#0", text, channel))]


def judge_one(text: str, summary: str | None, earlier: tuple[str, ...] = (), channel: str = "typed",
              precision: str = "precise"):
    j = RulesJudge(precision=precision).judge([Candidate("c#0", text, channel)], summary, earlier)
    return [(i.text, c.carried, c.cue) for i, c in zip(j.in_force, j.carries)]


# --------------------------------------------------------------------------- the table


def test_every_cue_the_judge_names_is_a_row_of_the_table_with_a_known_decision_and_strength():
    names = {(c.lang, c.name) for c in cues.all_cues()}
    assert all(c.decision in ("instruction", "carry", "drop", "veto") and c.strength in cues.STRENGTHS
               for c in cues.all_cues())
    texts = [
        "don't touch the lockfile", "No new dependencies.", "keep the existing retry logic",
        "maintain the current public API", "ask me before changing the schema", "use the queue, not a cron job",
        "defer the caching work", "I'll merge it myself", "no, ignore this part",
        "マイグレーションは触らないでください", "不要修改配置文件", "설정 파일은 건드리지 마세요", "no toques las migraciones",
        "não mexa no banco de dados", "ne touche pas aux migrations", "bitte die Migrationen nicht anfassen",
        "не трогай миграции",
    ]
    for t in texts:
        found = read(t)
        assert found, t
        for _, _, cue in found:
            lang, _, name = cue.rpartition(":")
            assert (lang or "en", name) in names, cue
    for c in cues.CARRY_CUES + cues.DROP_CUES:
        assert c.decision in ("carry", "drop")


def test_the_precision_levels_admit_cues_by_strength():
    low = "fix the parser. C89. no VLAs."  # a short "no X" beside an instruction: a low cue
    assert [cue for _, _, cue in read(low, precision="balanced")] == ["no-x-beside-instruction"]
    assert read(low, precision="precise") == []
    assert cues.strength_of("no-x-beside-instruction") == "low" and cues.strength_of("neg-imperative") == "high"
    with pytest.raises(ValueError, match="unknown judge precision"):
        RulesJudge(precision="everything")


# --------------------------------------------------------------------------- kinds the issue lists


@pytest.mark.parametrize("text, rule, form", [
    ("Maintain the current public API of the client.", "Maintain the current public API of the client", "preserve"),
    ("stick with SQLite for now", "stick with SQLite for now", "preserve"),
    ("Leave the migration files unchanged.", "Leave the migration files unchanged", "explicit"),  # "leave X alone" frame
    ("Keep unchanged: steps 1 to 3 of the wizard.", "Keep unchanged: steps 1 to 3 of the wizard", "preserve"),
    ("ask me before changing the database schema", "ask me before changing the database schema", "restraint"),
    ("check with me first before you push anything", "check with me first before you push anything", "restraint"),
    ("i don't like it when you reformat whole files", "i don't like it when you reformat whole files", "explicit"),
    ("we should avoid global state in the plugin loader", "we should avoid global state in the plugin loader", "explicit"),
])
def test_rules_without_keep_or_a_negation_word_are_read(text, rule, form):
    assert [(t, f) for t, f, _ in read(text)] == [(rule, form)]


@pytest.mark.parametrize("text", [
    "keep going, this looks good",  # no object at risk
    "i don't like the colour, but it's fine",  # an opinion, not about the agent's conduct
    "maybe we could cache it, or we shouldn't touch the cache at all?",  # a hedged idea floated
    "perhaps don't bother with the retry logic or maybe just log it",
    "Cache-Control: no-cache",  # a pasted HTTP header
    "GET /api/v1/items HTTP/1.1",
    " WARN  [Reanimated] Please ensure that you don't access the value property during render.",  # a pasted log line
    "These are the logs I got: don't panic, retrying in 5s",
])
def test_near_misses_of_those_kinds_are_not_read(text):
    assert read(text) == []


def test_plan_rules_written_as_parentheses_dashes_and_bare_no_x_sentences_are_read():
    plan = ("Implement the following plan:\n\n## Approach\n\n- Store sessions in Redis (not in the process memory)\n"
            "- No changes to the billing service.\n\n### Public API (unchanged)\n\n- Add a `ttl` option.\n")
    found = {(t, f) for t, f, _ in read(plan, channel="plan")}
    assert ("not in the process memory", "contrastive") in found
    assert ("No changes to the billing service", "explicit") in found
    assert ("Public API (unchanged)", "preserve") in found


def test_a_teammates_message_is_not_the_users_words():
    text = '<teammate-message teammate_id="lead">Do NOT modify the payment flows.</teammate-message>'
    assert read(text) == []


# --------------------------------------------------------------------------- other languages


@pytest.mark.parametrize("text, lang, form", [
    ("マイグレーションファイルは絶対に変更しないでください。", "ja", "explicit"),
    ("設定ファイルはそのままにしてください。", "ja", "preserve"),
    ("请不要修改数据库迁移文件。", "zh", "explicit"),
    ("先不要提交代码。", "zh", "explicit"),
    ("마이그레이션 파일은 건드리지 마세요.", "ko", "explicit"),
    ("이 함수는 그대로 유지해 주세요.", "ko", "preserve"),
    ("Por favor, no toques las migraciones.", "es", "explicit"),
    ("Não mexa no esquema do banco de dados.", "pt", "explicit"),
    ("Ne modifie pas les fichiers de migration.", "fr", "explicit"),
    ("Bitte die Datenbankschemata nicht ändern.", "de", "explicit"),
    ("Пожалуйста, не трогай файлы миграций.", "ru", "explicit"),
    ("No quiero que cambies la API pública.", "es", "explicit"),
    ("Mantén la estructura de carpetas actual.", "es", "preserve"),
    ("Você não deve alterar o arquivo de configuração.", "pt", "explicit"),
    ("Je ne veux pas que tu touches au schéma.", "fr", "explicit"),
    ("Garde le format de sortie actuel.", "fr", "preserve"),
    ("Die Tests darfst du auf keinen Fall löschen.", "de", "explicit"),
    ("Die alte Schnittstelle bitte beibehalten.", "de", "preserve"),
])
def test_each_language_table_reads_a_prohibition(text, lang, form):
    found = read(text)
    assert [(f, cue.split(":")[0]) for _, f, cue in found] == [(form, lang)]


@pytest.mark.parametrize("text", [
    "マイグレーションは変更しないでもいいですか？",  # a question
    "この設定は変更しなくても大丈夫です。",  # no need
    "你不需要修改这个文件。",  # no need
    "이 파일은 수정할 필요 없어요.",  # no need
    "No hace falta tocar las migraciones.",
    "Pas besoin de modifier les migrations.",
    "Das funktioniert nicht mit der alten Version.",  # a description
    "Не нужно менять миграции.",
])
def test_near_misses_in_other_languages_are_not_read(text):
    assert read(text) == []


def test_a_language_no_table_reads_is_counted_never_silently_empty():
    judge = RulesJudge()
    c = Candidate("c#0", "อย่าแก้ไขไฟล์การตั้งค่า กรุณาเก็บไว้เหมือนเดิม", "typed")
    j = judge.judge([c], "Summary.")
    assert j.in_force == () and j.skipped_languages == ("th",) and j.unread == (("c#0", "th"),)


@pytest.mark.parametrize("line, lang", [
    ("please don't change the public API of the session store", "en"),
    ("マイグレーションは触らないでください", "ja"), ("不要修改数据库迁移文件", "zh"), ("마이그레이션 파일은 건드리지 마세요", "ko"),
    ("не трогай миграции, пожалуйста", "ru"), ("не чіпай міграції, будь ласка", "uk"),
    ("por favor no toques las migraciones del proyecto", "es"), ("ok", "und"), ("fix `foo.py`", "und"),
])
def test_the_language_of_a_line(line, lang):
    assert cues.language_of(line) == lang


# --------------------------------------------------------------------------- carrying


SUMMARY_1 = 'This session is being continued.\n\n6. All user messages:\n   - "don\'t touch the billing module"\n   - "add the CSV export"\n'
SUMMARY_2 = 'This session is being continued.\n\n6. All user messages:\n   - "now the totals row"\n'


def test_a_rule_the_summary_quotes_is_carried_and_one_an_earlier_summary_quoted_then_dropped_is_unquoted_again():
    assert judge_one("don't touch the billing module", SUMMARY_1) == [("don't touch the billing module", True, "quoted")]
    assert judge_one("don't touch the billing module", SUMMARY_2, (SUMMARY_1,)) == [
        ("don't touch the billing module", False, "unquoted-again")]


def test_a_quote_needs_the_rules_naming_words():
    rule = "don't touch module_7.py"
    assert quoted_share(rule, _summary("Summary: don't touch module_3.py.")) == 0.0
    assert quoted_share(rule, _summary("Summary: don't touch module_7.py.")) == 1.0


def test_a_summary_that_says_the_thing_was_removed_does_not_keep_a_keep_rule():
    rule = "keep the legacy CSV parser"
    assert judge_one(rule, "The user asked for a faster import. Removed the legacy CSV parser and its tests.") == [
        (rule, False, "removed")]
    assert judge_one(rule, "The legacy CSV parser was kept unchanged, as the user asked.")[0][1] is True


def test_a_rule_missing_from_a_user_message_list_alerts_at_precise_only_when_nothing_of_it_is_left():
    short = "don't rename the config keys"
    assert judge_one(short, SUMMARY_2) == [(short, False, "not-quoted-no-trace")]
    traced = SUMMARY_2 + "\n7. Pending Tasks:\n   - document the config keys of the exporter\n"
    assert judge_one(short, traced) == [(short, True, "below-precision:not-quoted")]  # its words are still there
    assert judge_one(short, traced, precision="balanced") == [(short, False, "not-quoted")]
    long = "Here is the whole spec of the exporter. " * 12 + "don't rename the config keys."
    assert judge_one(long, SUMMARY_2) == [("don't rename the config keys", True, "below-precision:not-quoted-long-no-trace")]
    assert judge_one(long, SUMMARY_2, precision="balanced")[0][1] is True
    assert judge_one(long, SUMMARY_2, precision="recall") == [("don't rename the config keys", False, "not-quoted-long-no-trace")]


def test_an_opaque_summary_carries_nothing_and_says_so():
    assert judge_one("never push to main", None) == [("never push to main", False, "opaque")]


def test_a_bare_matcher_still_judges_as_it_did():
    m = ProhibitionMatcher()
    (p,) = m.prohibitions("Do not edit the generated files.")
    assert m.judge("The user said never to edit generated files.", p) == "carried"
    assert m.judge_cue("The user said never to edit generated files.", p)[1] == "negated-mention"


def test_the_structural_signal_needs_no_language_a_japanese_rule_quoted_once_then_gone_is_unquoted_again():
    rule = "本番データベースには絶対に接続しないでください。"
    first = f'Summary.\n\n6. All user messages:\n   - "CSVエクスポートを追加して"\n   - "{rule}"\n'
    second = 'Summary.\n\n6. All user messages:\n   - "合計行もお願いします"\n'
    assert judge_one(rule, first) == [(rule, True, "quoted")]
    assert judge_one(rule, second, (first,)) == [(rule, False, "unquoted-again")]
    # an English summary that restates it with a code name the rule gives keeps it
    coded = "`prod-db` には接続しないでください。"
    assert judge_one(coded, "Summary: the user said never to connect to `prod-db`.")[0][1:] == (True, "code-name")
