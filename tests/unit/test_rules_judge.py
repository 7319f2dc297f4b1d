"""The ``rules`` judge: named cues, the precision levels, other languages, structural carry (issue 22).

Every sentence here was written for these tests (no real transcript). Each kind of the issue's
misses and false alarms has a test of the kind and of its near miss.
"""

from __future__ import annotations

import pytest

from stream.adapters.compaction import cues, judge_rules
from stream.adapters.compaction.judge import Candidate
from stream.adapters.compaction.judge_rules import RulesJudge, _summary, quoted_share
from stream.adapters.compaction.prohibitions import ProhibitionMatcher

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
        "don't touch the lockfile",
        "No new dependencies.",
        "keep the existing retry logic",
        "maintain the current public API",
        "ask me before changing the schema",
        "use the queue, not a cron job",
        "defer the caching work",
        "I'll merge it myself",
        "no, ignore this part",
        "マイグレーションは触らないでください",
        "不要修改配置文件",
        "설정 파일은 건드리지 마세요",
        "no toques las migraciones",
        "não mexa no banco de dados",
        "ne touche pas aux migrations",
        "bitte die Migrationen nicht anfassen",
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
    low = "can we not filter in the client?"  # a negative request asked, not stated: a low cue
    assert [cue for _, _, cue in read(low, precision="balanced")] == ["neg-request"]
    assert read(low, precision="precise") == []
    assert cues.strength_of("neg-request") == "low" and cues.strength_of("neg-imperative") == "high"
    with pytest.raises(ValueError, match="unknown judge precision"):
        RulesJudge(precision="everything")


# --------------------------------------------------------------------------- kinds the issue lists


@pytest.mark.parametrize(
    "text, rule, form",
    [
        ("Maintain the current public API of the client.", "Maintain the current public API of the client", "preserve"),
        ("stick with SQLite for now", "stick with SQLite for now", "preserve"),
        (
            "Leave the migration files unchanged.",
            "Leave the migration files unchanged",
            "explicit",
        ),  # "leave X alone" frame
        ("Keep unchanged: steps 1 to 3 of the wizard.", "Keep unchanged: steps 1 to 3 of the wizard", "preserve"),
        ("ask me before changing the database schema", "ask me before changing the database schema", "restraint"),
        ("check with me first before you push anything", "check with me first before you push anything", "restraint"),
        ("i don't like it when you reformat whole files", "i don't like it when you reformat whole files", "explicit"),
        (
            "we should avoid global state in the plugin loader",
            "we should avoid global state in the plugin loader",
            "explicit",
        ),
    ],
)
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
    "Не нужно беспокоиться о миграциях.",  # reassurance ("не нужно <act>" opening a sentence refuses it: round 11)
])
def test_near_misses_in_other_languages_are_not_read(text):
    assert read(text) == []


def test_a_language_no_table_reads_is_counted_never_silently_empty():
    judge = RulesJudge()
    c = Candidate("c#0", "อย่าแก้ไขไฟล์การตั้งค่า กรุณาเก็บไว้เหมือนเดิม", "typed")
    j = judge.judge([c], "Summary.")
    assert j.in_force == () and j.skipped_languages == ("th",) and j.unread == (("c#0", "th"),)


@pytest.mark.parametrize(
    "line, lang",
    [
        ("please don't change the public API of the session store", "en"),
        ("マイグレーションは触らないでください", "ja"),
        ("不要修改数据库迁移文件", "zh"),
        ("마이그레이션 파일은 건드리지 마세요", "ko"),
        ("не трогай миграции, пожалуйста", "ru"),
        ("не чіпай міграції, будь ласка", "uk"),
        ("por favor no toques las migraciones del proyecto", "es"),
        ("Geen API keys in de code", "nl"),  # short, half English: one Dutch word tells it
        ("the net effect is an API with no keys", "en"),
        ("ok", "und"),
        ("fix `foo.py`", "und"),
    ],
)
def test_the_language_of_a_line(line, lang):
    assert cues.language_of(line) == lang


# --------------------------------------------------------------------------- carrying


SUMMARY_1 = (
    "This session is being continued.\n\n6. All user messages:\n"
    '   - "don\'t touch the billing module"\n   - "add the CSV export"\n'
)
SUMMARY_2 = 'This session is being continued.\n\n6. All user messages:\n   - "now the totals row"\n'


def test_a_rule_the_summary_quotes_is_carried_and_one_an_earlier_summary_quoted_then_dropped_is_unquoted_again():
    assert judge_one("don't touch the billing module", SUMMARY_1) == [
        ("don't touch the billing module", True, "quoted")
    ]
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


def test_a_short_message_rule_missing_from_a_user_message_list_alerts_at_precise_even_with_its_words_left():
    short = "don't rename the config keys"
    assert judge_one(short, SUMMARY_2) == [(short, False, "not-quoted-no-trace")]
    traced = SUMMARY_2 + "\n7. Pending Tasks:\n   - document the config keys of the exporter\n"
    assert judge_one(short, traced) == [(short, False, "not-quoted")]  # its words are left, the rule is not
    assert judge_one(short, traced, precision="balanced") == [(short, False, "not-quoted")]
    long = "## Exporter spec\n\n" + "Here is the whole spec of the exporter. " * 12 + "don't rename the config keys."
    # a long message's rule the list does not quote alerts at recall only (pasted documents: poor on every fold)
    assert judge_one(long, SUMMARY_2) == [
        ("don't rename the config keys", True, "below-precision:not-quoted-long-no-trace")
    ]
    assert judge_one(long, SUMMARY_2, precision="recall") == [("don't rename the config keys", False,
                                                                "not-quoted-long-no-trace")]
    medium = "## Exporter spec\n\n" + "Here is the whole spec of the exporter. " * 12 + "Keep the existing config keys."
    assert judge_one(medium, SUMMARY_2) == [
        ("Keep the existing config keys", True, "below-precision:not-quoted-long-no-trace")
    ]
    assert judge_one(medium, SUMMARY_2, precision="recall")[0][1:] == (False, "not-quoted-long-no-trace")


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


# --------------------------------------------------------------------------- the second design: structure first


def test_a_summarys_sections_and_its_list_of_the_users_messages_are_found_by_structure():
    from stream.adapters.compaction.judge_rules import sections, user_message_list

    text = ("Summary:\n1. Primary Request and Intent:\n   - a CSV export\n   1. a nested item:\n"
            "## 6. All user messages\n   - \"first\"\n   - \"second\"\n7. Pending Tasks:\n   - none\n")
    assert [h for h, _ in sections(text)] == [
        "",
        "1. Primary Request and Intent",
        "6. All user messages",
        "7. Pending Tasks",
    ]
    assert user_message_list(text).split() == ['-', '"first"', '-', '"second"']
    german = "1. Anfrage:\n  - ein Export\n6. Alle Benutzernachrichten:\n  - \"nicht pushen\"\n7. Offene Aufgaben:\n"
    assert user_message_list(german).strip() == '- "nicht pushen"'
    japanese = "1. 依頼:\n  - 出力\n6. ユーザーのメッセージ:\n  - 「テストを消さないで」\n"
    assert "テスト" in user_message_list(japanese)
    # no heading in a known language: the section whose items are mostly quotes
    unnamed = "1. Intent:\n - x\n2. Nachrichten:\n - \"eins\"\n - \"zwei\"\n - «drei»\n3. Next:\n - y\n"
    assert user_message_list(unnamed).split()[1::2] == ['"eins"', '"zwei"', "«drei»"]
    assert user_message_list("1. Intent:\n - x\n2. Next:\n - \"one quote\"\n - y\n") is None


def test_code_names_are_what_survives_translation_and_are_found_as_whole_tokens():
    from stream.adapters.compaction.judge_rules import code_names, traced

    assert code_names("don't touch `billing/ledger.py` or the retry_policy, keep PORT 8080") >= {
        "billing/ledger.py", "retry_policy", "port", "8080"}
    assert code_names("Redisのキャッシュは使わないで") >= {"redis"}  # a Latin word in a Japanese rule
    assert code_names("don't touch the billing module") == frozenset()
    assert traced("never edit `ledger.py`", _summary("We left ledger.py alone.")) == ("ledger.py",)
    assert traced("never edit `ledger.py`", _summary("We edited old_ledger.pyc.")) == ()


def test_a_rule_quoted_once_then_gone_is_a_precise_drop_only_when_nothing_of_it_is_left():
    rule = "don't touch `ledger.py`"
    first = f'Summary.\n\n6. All user messages:\n   - "{rule}"\n'
    gone = 'Summary.\n\n6. All user messages:\n   - "now the totals row"\n'
    named = gone + "\n7. Pending Tasks:\n   - add a totals row to the report built from ledger.py\n"
    assert judge_one(rule, gone, (first,)) == [(rule, False, "unquoted-again")]
    # named only in a sentence with no negation, keep or deferral word: the thing is there, the rule is not
    assert judge_one(rule, named, (first,)) == [(rule, False, "unquoted-again-unstated")]
    # named beside a negation the matcher cannot read as the rule: it may be a paraphrase, balanced only
    hedged = gone + "\n7. Pending Tasks:\n   - the totals come from ledger.py, which is not the report's source\n"
    assert judge_one(rule, hedged, (first,)) == [(rule, True, "below-precision:unquoted-again-traced")]
    assert judge_one(rule, hedged, (first,), precision="balanced") == [(rule, False, "unquoted-again-traced")]
    # a generic code name ("PR") beside some negation, without the rule's words, is a coincidence
    rule2 = "Don't open the upstream PR for now."
    first2 = f'Summary.\n\n6. All user messages:\n   - "{rule2}"\n'
    merged = gone + "\n7. Pending Tasks:\n   - merge PR #12, not before the tests pass\n"
    assert judge_one(rule2, merged, (first2,)) == [("Don't open the upstream PR for now", False,
                                                   "unquoted-again-unstated")]


def test_a_plan_rule_alerts_at_precise_when_the_summary_names_none_of_its_code_names():
    plan = "Implement the following plan:\n\n## Steps\n\n- Add the export button.\n- Do not modify `schema.sql`.\n"
    assert judge_one(plan, "Summary: the export button was added.", channel="plan") == [
        ("Do not modify `schema.sql`", False, "plan-no-trace")]
    said = "Summary: the export button was added; the migration in schema.sql is next."
    assert judge_one(plan, said, channel="plan") == [("Do not modify `schema.sql`", False, "plan-named-unstated")]
    near = "Summary: the export button was added; schema.sql is not part of the export."
    assert judge_one(plan, near, channel="plan") == [
        ("Do not modify `schema.sql`", True, "below-precision:plan-unstated")
    ]
    assert judge_one(plan, near, channel="plan", precision="balanced")[0][1:] == (False, "plan-unstated")


#: A sentence in each language that describes (no rule): the plan's language is told by it.
_DESCRIBES = {
    "de": "Wir bauen einen Export der Berichte für die Buchhaltung.",
    "es": "Vamos a construir una exportación de los informes.",
    "pt": "Vamos construir uma exportação dos relatórios para a equipe.",
    "fr": "Nous allons construire un export des rapports.",
    "it": "Costruiamo una esportazione dei rapporti per la contabilità.",
    "ja": "レポートのエクスポート機能を作ります。",
    "zh": "我们要为财务做一个报表导出功能。",
    "ko": "회계팀을 위한 보고서 내보내기 기능을 만듭니다.",
    "ru": "Мы делаем экспорт отчётов для бухгалтерии.",
    "vi": "Chúng ta sẽ làm chức năng xuất báo cáo cho kế toán.",
}


@pytest.mark.parametrize("lang, bullet", [
    ("de", "Keine Änderungen an der öffentlichen Schnittstelle"), ("de", "Ohne neue Abhängigkeiten"),
    ("de", "`settings.toml` bleibt unverändert"),
    ("es", "No tocar el esquema de la base de datos"), ("es", "Sin librerías nuevas"),
    ("pt", "Não alterar as rotas existentes"), ("pt", "Sem bibliotecas novas"),
    ("fr", "Ne pas toucher au schéma de la base"), ("fr", "Aucune nouvelle bibliothèque"),
    ("it", "Senza librerie nuove"), ("it", "Non toccare le rotte esistenti"),
    ("ja", "既存のルーティングは変更しない"), ("ja", "外部ライブラリは使わない"),
    ("zh", "不修改现有的路由"), ("ko", "기존 라우팅은 변경하지 않음"),
    ("ru", "Не трогать существующие маршруты"), ("vi", "Không sửa các tuyến hiện có"),
])
def test_a_plan_bullet_in_each_language_is_read_by_the_item_cues(lang, bullet):
    plan = f"Implement the following plan:\n\n## 1\n\n{_DESCRIBES[lang]}\n\n- {bullet}\n- {_DESCRIBES[lang]}\n"
    found = [(t, cue) for t, _, cue in read(plan, channel="plan")]
    assert [t for t, _ in found] == [bullet] and found[0][1].startswith(f"{lang}:"), found


def test_item_cues_read_only_short_list_items_or_plan_lines():
    assert read("Sin librerías nuevas y sin cambios en la interfaz, por favor revisa el resultado y avísame.") == []
    assert read(f"{_DESCRIBES['es']}\n- Sin librerías nuevas") != []  # a typed list item
    long_item = "- Ohne neue Abhängigkeiten " + "und mit einer langen Erklärung der Gründe " * 8
    assert read(long_item) == []


def test_a_line_too_short_to_tell_its_language_is_read_in_its_messages_language():
    assert cues.language_of("Sin librerías nuevas") == "und"
    assert cues.language_in("Sin librerías nuevas", "es") == "es"
    assert cues.language_in("Add the export button", "es") == "en"  # plainly English
    assert (
        cues.main_language(["es", "und", "en", "es"]) == "es" and cues.main_language(["en", "und", "de", "en"]) == "en"
    )


@pytest.mark.parametrize("text, lang, form", [
    ("Warte auf meine Freigabe, bevor du etwas löschst.", "de", "restraint"),
    ("Avant chaque commit, attends ma validation.", "fr", "restraint"),
    ("Pregúntame antes de borrar archivos.", "es", "restraint"),
    ("Chiedimi prima di rinominare i moduli.", "it", "restraint"),
    ("删除之前先给我确认。", "zh", "restraint"),
    ("这个迁移暂时跳过。", "zh", "defer"),
    ("用配置文件而不是环境变量。", "zh", "contrastive"),
    ("削除する前に承認を待ってください。", "ja", "restraint"),
    ("Non cancellare i test di integrazione.", "it", "explicit"),
    ("Xin đừng xóa các bài kiểm tra tích hợp.", "vi", "explicit"),
    ("Giữ nguyên cấu trúc thư mục hiện tại.", "vi", "preserve"),
    ("Le module de paiement, jamais de valeurs en dur.", "fr", "explicit"),
])
def test_restraint_defer_contrast_and_the_new_tables(text, lang, form):
    assert [(f, cue.split(":")[0]) for _, f, cue in read(text)] == [(form, lang)]


@pytest.mark.parametrize("text", [
    "Hai cancellato i test di integrazione?",  # a question
    "Forse non cancellare i test, non so.",  # hedged
    "Không cần sửa các bài kiểm tra.",  # no need
    "Warte, ich schaue mir das kurz an.",  # no "auf meine Freigabe"
])
def test_near_misses_of_the_new_cues_are_not_read(text):
    assert read(text) == []


def test_a_summary_that_names_a_kept_thing_while_saying_it_was_removed_does_not_carry_a_foreign_keep_rule():
    rule = "`legacy_export.py` はそのままにしてください。"
    assert judge_one(rule, "Summary: legacy_export.py was kept unchanged.")[0][1:] == (True, "code-name")
    assert judge_one(rule, "Summary: removed legacy_export.py and its tests.")[0][1:] == (False, "removed")
    assert judge_one(rule, "Summary: the report page was restyled.")[0][1:] == (True, "below-precision:unmatched")


def test_the_instructions_of_a_prompt_the_user_writes_for_another_model_are_not_read():
    text = (
        "## Step 2: the triage agent\n\n- Model: a small one\n- Do not give it web search\n\nSystem Prompt:\n\n"
        "  You sort tickets.\n  Rules:\n  - Never reply to the customer\n\nAfter that, do not touch the billing "
        "agent.\n"
    )
    assert [t for t, _, _ in read(text)] == ["Do not give it web search", "After that, do not touch the billing agent"]
    assert [t for t, _, _ in read("Prompt système :\n  Ne réponds jamais au client.\n")] == []


def test_a_long_messages_rule_the_list_does_not_quote_alerts_at_recall_only_for_a_strong_instruction_cue_too():
    spec = "# Importer spec\n\n" + "This is the spec of the importer, section by section. " * 10
    strong = spec + "Do not touch the ledger tables."
    summary = SUMMARY_2 + "\n7. Pending Tasks:\n   - finish the importer spec: the ledger tables come next\n"
    assert judge_one(strong, summary) == [("Do not touch the ledger tables", True, "below-precision:not-quoted-long")]
    assert judge_one(strong, summary, precision="balanced")[0][1] is True
    assert judge_one(strong, summary, precision="recall") == [
        ("Do not touch the ledger tables", False, "not-quoted-long")
    ]
    medium = spec + "Keep the existing ledger tables."
    assert judge_one(medium, summary) == [("Keep the existing ledger tables", True, "below-precision:not-quoted-long")]
    assert judge_one(medium, summary, precision="recall")[0][1:] == (False, "not-quoted-long")


def test_a_long_prompt_that_casts_the_agent_in_a_role_is_a_template_not_the_users_words():
    template = ("SWARM LAUNCHER\n\nYou are the lead coordinator of a team of workers.\n\n"
                + "- assign the next task to a free worker\n" * 60 + "\n❌ NEVER let a worker idle\n")
    assert len(template) > 2000 and read(template) == []
    typed = "You are right, the first fix was wrong. Never push to main without asking.\n" + "- a note of mine\n" * 130
    assert [t for t, _, _ in read(typed)] == ["Never push to main without asking"]


def test_a_long_prompt_the_user_typed_in_a_role_is_read_and_one_built_like_a_document_is_not():
    # opens with the role line, then plain paragraphs and points: the user's own prompt (banner rules are typed too)
    typed = ("You are a careful backend engineer working on my invoicing service.\n\n=========\nGOAL\n"
             "Make the export faster.\n\n" + "- measure the slow query first\n" * 70
             + "\nRULES\n- Do not touch the ledger tables.\n")
    assert len(typed) > 2000
    assert "Do not touch the ledger tables" in [t for t, _, _ in read(typed)]
    # the same role line over a document's headings or tag lines: a tool's template
    document = ("You are a careful backend engineer.\n\n## Goal\n\nMake the export faster.\n\n## Rules\n\n"
                + "- measure the slow query first\n" * 70 + "- Do not touch the ledger tables.\n")
    assert read(document) == []
    tagged = ("You are a careful backend engineer.\n<context>\n" + "- measure the slow query first\n" * 70
              + "</context>\n- Do not touch the ledger tables.\n")
    assert read(tagged) == []


def test_an_ide_notice_before_a_typed_prompt_is_not_the_users_words_nor_its_opening():
    notice = ("<ide_opened_file>The user opened the file src/app.ts in the IDE. This may or may not be related."
              "</ide_opened_file>\n")
    prompt = (notice + "You are a careful frontend engineer.\n\n" + "- make the page load faster\n" * 80
              + "Never add a new font.")
    assert len(prompt) > 2000
    assert [t for t, _, _ in read(prompt)] == ["Never add a new font"]


#: A long typed message of the user's own (a comment on a plan: points, no headings) and a document of the same rule.
_OWN = ("Looks right overall; notes below.\n\n" + "- the retry loop looks right to me, go ahead with that part\n" * 8
        + "- Never cache the exchange rates.\n- the tests can wait until the end\n")
_DOC = "# Caching guide\n\n" + _OWN


def test_a_long_messages_rule_in_the_users_own_words_alerts_at_precise_when_the_list_does_not_quote_it():
    assert len(_OWN) > 400
    assert judge_one(_OWN, SUMMARY_2) == [("Never cache the exchange rates", False, "not-quoted-long-own")]
    # the same rule in a message built like a document (a heading, a fence, tag lines) stays recall-level
    assert judge_one(_DOC, SUMMARY_2) == [("Never cache the exchange rates", True,
                                           "below-precision:not-quoted-long-no-trace")]
    fenced = _OWN + "```\nrates = fetch()\n```\n"
    assert judge_one(fenced, SUMMARY_2)[0][1:] == (True, "below-precision:not-quoted-long-no-trace")
    # a skill's arguments are not typed prose; a conditional rule is carried by its condition; a medium cue is weaker
    assert judge_one(_OWN, SUMMARY_2, channel="command_args")[0][1] is True
    conditional = _OWN.replace("Never cache the exchange rates.",
                               "Never cache the exchange rates unless they are stale.")
    assert judge_one(conditional, SUMMARY_2)[0][1] is True
    medium = _OWN.replace("Never cache the exchange rates.", "Keep the existing exchange rate cache.")
    assert judge_one(medium, SUMMARY_2)[0][1] is True
    # quoted or restated, it is carried
    quoting = SUMMARY_2 + '   - "Looks right overall ... Never cache the exchange rates."\n'
    assert judge_one(_OWN, quoting)[0][1] is True


def test_a_very_long_message_is_read_only_in_its_lead_in_and_its_close():
    body = "".join(f"- pasted rule {n}: never call the billing API from worker {n}\n" for n in range(400))
    message = "Please file these notes. Don't push to main today.\n\n" + body + "\nAnd never delete the ledger folder."
    assert len(message) > 16_000
    texts = [t for t, _, _ in read(message)]
    assert "Don't push to main today" in texts and any("ledger folder" in t for t in texts)
    # the pasted body is not the user's words
    assert not any(t.endswith("worker 200") for t in texts) and len(texts) < 40
    short = "Please file these notes.\n\n" + body[:3000]
    assert any("billing API" in t for t, _, _ in read(short))  # a message of ordinary length is read whole


def test_a_rule_file_read_once_stays_in_view_after_a_boundary_except_at_recall():
    from stream.adapters.compaction import cues
    assert cues.PRECISION_LEVELS["precise"].rule_files_kept and cues.PRECISION_LEVELS["balanced"].rule_files_kept
    assert not cues.PRECISION_LEVELS["recall"].rule_files_kept


# --------------------------------------------------------------------------- round 5: plan lines in Japanese


def test_a_japanese_plan_line_is_read_when_a_parenthetical_reason_closes_it_or_it_says_out_of_scope():
    plan = ("## 方針\n- `parse_input()` は使わない（理由はモードの遷移先が違うため）。\n"
            "- 一括削除は対象外。\n- `save()` は呼ばず `flush()` だけ使う\n"
            "- 設定画面への適用は `apply_theme` に限定する\n")
    cues_read = {cue for _, _, cue in read(plan, "plan", precision="precise")}
    assert {"ja:neg-item", "ja:out-of-scope", "ja:zu-clause", "ja:limit-to"} <= cues_read
    # near misses: a description that is not a plan line, a "no need", a question
    assert read("このモジュールは外部ライブラリを使わない設計です（読みやすさのため）", "typed") == []
    assert read("- 削除は不要（あとで確認）", "plan") == []
    assert read("- これは対象外ですか？", "plan") == []


def test_a_foreign_plan_rule_whose_code_names_the_summary_names_but_never_beside_a_negation_is_dropped_at_precise():
    rule = "# 計画\n\n- `parse_input()` は使わない（遷移先が違う）。"
    dropped = "Summary: implemented the mode switch; `parse_input()` handles the Esc key now."
    [(_, carried, cue)] = judge_one(rule, dropped, channel="plan")
    assert (carried, cue) == (False, "plan-named-unstated")
    kept = "Summary: implemented the mode switch without `parse_input()` (plan: not used)."
    assert judge_one(rule, kept, channel="plan")[0][1:] == (True, "code-name")
    excluded = "Summary: `parse_input()` explicitly excluded from the new path."
    assert judge_one(rule, excluded, channel="plan")[0][1:] == (True, "code-name")
    # no code name at all: nothing to tell a translation from a drop, so only balanced alerts
    bare = "# 計画\n\n- いずれも振る舞い変更なし（リファクタのみ）。"
    assert judge_one(bare, dropped, channel="plan")[0][1:] == (True, "below-precision:plan-unstated")
    assert judge_one(bare, dropped, channel="plan", precision="balanced")[0][1:] == (False, "plan-unstated")


def test_japanese_keep_and_elliptic_requests_and_a_kanji_only_line_of_a_japanese_message():
    plan = "# 計画\n\n- `data-role` 属性はそのまま残す（理由は上記）\n- 実行時間: 大幅短縮（初期化不要）\n"
    found = read(plan, "plan", precision="precise")
    assert [(form, cue) for _, form, cue in found] == [("preserve", "ja:keep-plain")]  # 不要 is "unneeded" in ja
    assert read("ログは残さないで、毎回確認しないように", precision="precise")
    assert read("エラーが出ないように修正しました。", precision="precise") == []  # a report, not a request
    assert read("# Plan\n\n**Generated files (read-only):**\n- gen/a.py\n", "plan", precision="precise")


def test_a_deferral_marker_closing_the_clause_an_order_of_work_and_paired_refusals_are_read():
    assert [(f, c) for _, f, c in read("Let's worry about the Java 21 upgrade later on.", precision="precise")] == [
        ("defer", "defer-marker")]
    assert read("we can deal with the cache invalidation afterwards", precision="precise")
    assert [(f, c) for _, f, c in read("We should first agree on a design before writing any code.",
                                       precision="precise")] == [("restraint", "restraint")]
    assert read("I looked at it later on.", precision="precise") == []  # a report
    steps = "# Plan\n\n## Step 4\n1. Save the session state\n2. No state transitions, no cleanup\n"
    assert {c for _, _, c in read(steps, "plan", precision="precise")} == {"no-x-paired"}
    assert read("# Plan\n\n## Step 4\n1. Save the session state\n2. No errors, no warnings\n", "plan",
                precision="precise") == []  # a report of a step


def test_a_non_latin_rules_plain_latin_words_speak_for_it_only_when_it_names_nothing_more_specific():
    from stream.adapters.compaction.judge_rules import code_names

    assert code_names("`render_text()` は使わない（format が違う）") == {"render_text()"}
    assert code_names("Redisのキャッシュは使わないで") == {"redis"}


def test_polish_has_a_table_of_its_own_negative_imperatives_must_not_keep_and_list_items():
    assert [c for _, _, c in read("Proszę nie zmieniaj plików konfiguracyjnych w katalogu config.")] == [
        "pl:nie-imperative"]
    assert [c for _, _, c in read("Nie wolno commitować bezpośrednio do gałęzi main, to jest ważne.")] == [
        "pl:must-not"]
    assert [f for _, f, _ in read("Zostaw ten moduł bez zmian, tak jak jest teraz w repozytorium.")] == ["preserve"]
    plan = ("# Plan wdrożenia\n\nTen plan opisuje eksport raportów do pliku CSV dla działu księgowości.\n\n"
            "## Zasady\n- Bez nowych zależności w projekcie\n")
    assert [c for _, _, c in read(plan, "plan")] == ["pl:neg-item"]
    # near misses: a question, a non-necessity, a description
    assert read("Czy możesz nie dodawać nowych zależności do tego projektu?") == []
    assert read("Nie trzeba zmieniać README w tym zadaniu, jest aktualne.") == []
    assert read("Ten moduł nie działa poprawnie od wczoraj i nie wiem dlaczego.") == []


def test_a_sentence_that_names_the_thing_with_a_restating_word_of_the_rules_form_keeps_it_below_precise():
    limit = "# 計画\n\n- ヘルパーの適用は `apply_theme` に限定する\n"
    only = "Summary: the helper now serves `apply_theme` only; the dialogs were left as they were."
    assert judge_one(limit, only, channel="plan")[0][1] is True
    unrelated = "Summary: `apply_theme` was renamed in the settings screen."
    assert judge_one(limit, unrelated, channel="plan")[0][1:] == (False, "plan-named-unstated")
    skip = "# 計画\n\n- `legacy_sync()` は呼ばず `sync()` を使う\n"
    assert judge_one(skip, "Summary: `legacy_sync()` was omitted from the new path.", channel="plan")[0][1] is True


def test_korean_and_chinese_plan_lines_scope_exclusions_plain_keeps_and_restrictions():
    ko = ("# 계획\n\n이 계획은 내보내기 기능을 구현하는 방법을 설명합니다.\n\n- 기존 API는 유지한다\n"
          "- 대량 삭제는 범위 밖\n- 현재 캐시는 동작하지 않는다\n")
    assert {c for _, _, c in read(ko, "plan", precision="precise")} == {"ko:keep-plain", "ko:out-of-scope"}
    zh = ("# 计划\n\n这个计划说明如何实现导出功能。\n\n- 批量删除不在本次范围内\n"
          "- 新的辅助函数仅限于 `export_csv` 使用\n")
    assert {c for _, _, c in read(zh, "plan", precision="precise")} == {"zh:out-of-scope", "zh:limit-to"}


def test_a_restating_word_must_stand_beside_the_rules_name_not_anywhere_in_its_sentence():
    rule = "Don't open the upstream PR for now."
    first = f'Summary.\n\n6. All user messages:\n   - "{rule}"\n'
    gone = 'Summary.\n\n6. All user messages:\n   - "now the totals row"\n'
    far = gone + ("\n7. Pending Tasks:\n   - traced the upstream rename to a PR body annotation in the weekly report, "
                  "which says unchanged\n")
    assert judge_one(rule, far, (first,))[0][1:] == (False, "unquoted-again-unstated")
    near = gone + "\n7. Pending Tasks:\n   - the upstream PR stays unopened for now, as the user asked\n"
    assert judge_one(rule, near, (first,))[0][1] is True


def test_japanese_stop_it_and_keep_it_as_it_is_requests_but_not_reports_or_no_need():
    assert [c for _, _, c in read("毎回コミットするのはやめてください。")] == ["ja:stop-it"]
    assert [f for _, f, _ in read("いや、元の案のままいこう。")] == ["preserve"]
    assert read("テストを書くのはやめてしまった。") == []  # a report
    assert read("このファイルは変更しなくていいです。") == []  # no need


def test_korean_stop_it():
    assert [c for _, _, c in read("매번 커밋하는 건 그만하세요.")] == ["ko:stop-it"]


def test_indonesian_and_ukrainian_have_tables_of_their_own():
    assert [c for _, _, c in read("Tolong jangan ubah file konfigurasi di folder config.")] == ["id:jangan"]
    assert [c for _, _, c in read("Kamu tidak boleh commit langsung ke branch main.")] == ["id:must-not"]
    assert read("Tidak perlu ubah README untuk tugas ini.") == []  # no need
    assert [c for _, _, c in read("Будь ласка, не змінюй конфігураційні файли в каталозі config.")] == [
        "uk:neg-imperative"]
    assert read("Не потрібно змінювати README для цього завдання.") == []  # no need


# --------------------------------------------------------------------------- round 6


def test_a_japanese_dislike_stated_as_a_rule_is_read_but_not_a_conceded_past_or_asked_one():
    said = [cue for _, _, cue in read("API の呼び出し経路は無駄に増やしたくはない。", "typed")]
    assert said == ["ja:dont-want"]
    assert [cue for _, _, cue in read("まだ v2 はリリースしたくない", "typed")] == ["ja:dont-want"]
    assert read("今日は外出したくないけど、やります。", "typed") == []  # conceded
    assert read("昨日は触りたくなかった。", "typed") == []  # past: a report
    assert read("まだリリースしたくないんだけどどうする？", "typed") == []  # a question


# --------------------------------------------------------------------------- round 7


def test_a_chinese_dislike_stated_as_a_rule_is_read_in_typed_text_and_rejection_feedback():
    said = [cue for _, _, cue in read("我不希望创建全局的配置文件，我希望的是本地配置", "rejection")]
    assert said == ["zh:dont-want"]
    assert [cue for _, _, cue in read("我不想要新的依赖", "typed")] == ["zh:dont-want"]
    assert read("我不想改这个文件，但是没办法", "typed") == []  # conceded
    assert read("我不希望你删掉它吗？", "typed") == []  # a question


def test_a_chinese_limit_is_read_but_not_a_plain_count():
    said = [cue for _, _, cue in read("帮我设计一个工具。一次只问一个问题，总共不超过十个问题", "command_args")]
    assert said == ["zh:limit", "zh:limit"]  # two limits, one clause each (round 8)
    assert [cue for _, _, cue in read("每次只改一个文件", "typed")] == ["zh:limit"]
    assert read("这里一共有十个问题", "typed") == []


def test_a_korean_deferral_stated_as_a_noun_is_read():
    assert [cue for _, _, cue in read("로그인 기능은 나중에 적용 (지금은 테스트 중)", "typed")] == ["ko:later"]
    assert read("나중에 적용된 설정을 확인했어요", "typed") == []  # a report, not a deferral


def test_a_french_reminder_not_to_forget_is_not_read_as_a_rule():
    assert read("n'oublie pas d'ignorer les fichiers temporaires.", "typed") == []
    assert [c for _, _, c in read("ne modifie pas les fichiers temporaires.", "typed")] == ["fr:neg-imperative"]


def test_a_request_to_take_care_not_to_lose_something_is_not_read_as_a_rule():
    assert read("make sure not to lose information when you merge the notes", "typed") == []
    assert read("make sure you don't miss any of the edge cases", "typed") == []
    assert [c for _, _, c in read("make sure not to delete the notes", "typed")] == ["neg-imperative"]


def test_a_negative_request_asked_as_a_question_is_read_below_precise_only():
    asked = "can we not add emojis to the docs?"
    assert [c for _, _, c in read(asked, "typed", precision="balanced")] == ["neg-request"]
    assert read(asked, "typed", precision="precise") == []


def test_a_bare_plural_subject_that_should_not_act_is_read_but_not_a_state():
    said = read("worker sessions shouldn't immediately upload after they log in", "typed")
    assert [c for _, _, c in said] == ["should-not-act"]
    assert read("tests shouldn't fail on a clean checkout", "typed") == []  # no action of the agent's


# --------------------------------------------------------------------------- round 8 (kinds; sentences written here)


def test_a_cjk_sentence_of_several_clauses_gives_one_rule_per_clause_a_cue_reads():
    found = read("先看整体，每次只改一个文件，总共不超过五个文件。")
    assert [(t, c) for t, _, c in found] == [("每次只改一个文件", "zh:limit"), ("总共不超过五个文件。", "zh:limit")]
    # one clause: the sentence is the rule, as before
    assert [t for t, _, _ in read("不要修改配置文件")] == ["不要修改配置文件"]


def test_korean_sentences_end_at_an_ascii_period_and_x_malgo_y_is_a_contrast():
    found = read("버튼은 빨간색말고 파란색으로. 그리고 위치가 오른쪽으로 쏠린거같아.")
    assert found == [("버튼은 빨간색말고 파란색으로.", "contrastive", "ko:rather-than")]
    assert [c for _, _, c in read("캐시하지 말고 새로 불러와줘")] == ["ko:neg-imperative"]  # the verb's 말고
    assert cues.language_of("v2 of utf8 please") != "ko"


def test_a_chinese_line_with_a_number_is_chinese_and_at_most_n_is_a_limit():
    assert cues.language_of("最多查看2个小时的数据来分析") == "zh"
    assert [c for _, _, c in read("最多查看2个小时的数据来分析")] == ["zh:limit"]
    assert read("这是最大的问题") == []


def test_chinese_seek_my_opinion_is_restraint_and_deciding_whether_is_no_question():
    assert [c for _, _, c in read("每一步都征求我的意见再决定是否需要修改")] == ["zh:ask-first"]
    assert read("是否需要修改配置？") == []


def test_chinese_not_the_one_i_want_is_a_contrast():
    found = read("现在目录下的那个插件并不是我希望使用的插件，我希望使用的是官方商店里的那个")
    assert [c for _, _, c in found] == ["zh:rather-than"]


def test_japanese_dewanaku_in_a_request_is_a_low_contrast_and_a_description_is_not():
    assert read("キャッシュではなく、毎回サーバーから取得してください", precision="precise") == []
    assert [c for _, _, c in read("キャッシュではなく、毎回サーバーから取得してください")] == ["ja:rather-than"]
    assert read("原因はキャッシュではなく、設定ファイルだった。") == []


def test_english_should_never_and_deferrals_to_a_later_phase_or_a_follow_up():
    assert [c for _, _, c in read("the exporter should never emit blank rows")] == ["should-never"]
    assert [c for _, _, c in read("in a later phase we can reuse the old layout ideas")] == ["defer-marker"]
    assert [c for _, _, c in read("let's put this down as a follow-up for the next session")] == ["defer-marker"]


def test_a_maxim_of_two_bare_verbs_is_not_a_rule():
    assert read("Ask, don't assume") == []
    assert read("Measure, don't guess.") == []
    assert [c for _, _, c in read("Don't tell anyone about the key")] == ["neg-imperative"]


def test_an_answer_to_a_question_about_what_is_left_out_is_the_rule():
    def answer(q: str, a: str) -> list[str]:
        judge = RulesJudge(precision="precise")
        return [i.cue for i, _ in judge.instructions(Candidate("c#0", a, "answer", question=q))]

    assert answer("Which parts are NOT part of the beta?", "CSV export") == ["answer-excludes"]
    assert answer("What should we skip for now?", "the mobile layout") == ["answer-excludes"]
    assert answer("Which parts are out of scope?", "None") == []
    assert answer("Should we skip the cache?", "Use a library instead") == []
    assert answer("Which color theme?", "Dark") == []


def test_a_plans_scope_cut_and_existing_things_unaffected():
    plan = ("## Plan: simplify the toolbar\n\n### Decisions\n- Drop the share button entirely.\n"
            "- The sync tab: cut it for now.\n- Existing drafts unaffected\n"
            "- Remove the unused import lines from app.ts entirely\n")
    found = [(t, c) for t, _, c in read(plan, channel="plan")]
    assert ("Drop the share button entirely", "plan-scope-cut") in found
    assert ("Existing drafts unaffected", "plan-existing-unaffected") in found
    assert not any("import" in t or "cut it" in t for t, _ in found)  # a code step; a pronoun's cut


# --------------------------------------------------------------------------- round 10 (kinds from folds W and X)


def test_i_dont_want_a_new_thing_and_negations_typed_without_their_apostrophe():
    assert [c for _, _, c in read("I don't want a new settings page")] == ["neg-imperative"]
    assert [c for _, _, c in read("i dont want a second lockfile in the repo")] == ["neg-imperative"]
    assert read("I don't want to rush this release") == []  # the user's own aim, not a rule


def test_a_negated_imperative_after_a_time_clause_without_its_comma():
    assert [t for t, _, _ in read("before you migrate dont rename the modules")] == [
        "before you migrate dont rename the modules"]
    assert [c for _, _, c in read("once the build is green never force push")] == ["neg-imperative"]
    assert read("when you don't know, ask me") == []  # the clause's own verb is negated: no rule of it


def test_where_a_thing_goes_and_where_not_is_a_contrast_without_a_comma_too():
    assert [c for _, _, c in read("the reports live in the S3 bucket not the repo")] == ["contrast"]
    assert [c for _, _, c in read("the secrets should be in the vault, not the env file")] == ["contrast"]
    assert read("the leak is in the cache layer not the client") == []  # a diagnosis, not a rule
    assert read("the script is in the tools folder not sure why") == []


def test_confirm_with_me_joined_to_the_work_it_holds_back_is_restraint():
    assert [c for _, _, c in read("update the schema and confirm with me before you migrate")] == ["consult-first"]
    assert [f for _, f, _ in read("if the API has to change, say why and get my approval")] == ["restraint"]
    assert read("and confirm with me that it builds on staging") == []


def test_chinese_not_yet_after_my_confirmation_and_a_refusal_of_an_act():
    assert [c for _, _, c in read("先不用写部署脚本")] == ["zh:later"]
    assert [c for _, _, c in read("我确认后再发布新版本")] == ["zh:after-me"]
    assert [c for _, _, c in read("测试通过以后你再上传")] == ["zh:after-me"]
    assert [c for _, _, c in read("不用修改测试用例", channel="rejection")] == ["zh:no-need-act"]
    assert read("不用担心这个") == [] and read("不需要改这个") == [] and read("不用改了，谢谢") == []


def test_chinese_keep_only_x_is_a_pruning_step_not_a_keep_rule():
    assert read("只保留两个分支") == []
    assert [c for _, _, c in read("保留现有的导出格式")] == ["zh:keep-as-is"]


def test_a_negated_conjunct_after_an_instruction_is_a_rule_of_its_own():
    assert [t for t, _, _ in read("cache the parsed rows and avoid a second network call.")] == [
        "avoid a second network call"]
    assert [t for t, _, _ in read("Fine by me, continue and make sure we never write into the fixtures folder!")] == [
        "make sure we never write into the fixtures folder"]
    assert read("store it in UTC and avoid timezone problems later") == []  # a goal, not a forbidden act
    assert read("run the linter and make sure it doesn't fail") == []


def test_an_imperative_to_look_before_acting_is_restraint_with_its_own_cue():
    assert [(f, c) for _, f, c in read("Study every migration before you edit the schema.")] == [
        ("restraint", "look-first")]
    assert [c for _, _, c in read("outline the approach before writing code")] == ["look-first"]
    assert [c for _, _, c in read("Show me the diff before committing.")] == ["look-first"]
    assert read("Open that config again before you edit it") == []  # a one-off re-read
    assert read("I read the docs before coding") == []  # the user's own account


def test_where_a_thing_is_stored_and_where_not_is_a_contrast():
    assert [c for _, _, c in read("the tokens should be stored in the keychain, not in a plain file")] == ["contrast"]
    assert read("the tokens were stored in the keychain") == []


# --------------------------------------------------------------------------- round 11 (kinds folds Y, Z, AB showed)


@pytest.mark.parametrize("text, cue", [
    ("não duplique a tela de login", "pt:neg-imperative"),  # the subjunctive of an act
    ("Por favor não invente valores padrão para o timeout", "pt:neg-imperative"),
    ("nao ignore os avisos do linter só porque são muitos", "pt:neg-imperative"),  # the tilde left out
    ("Não criar tabelas novas no banco de testes", "pt:neg-infinitive"),  # a rule in the infinitive
    ("nada deve ser apagado da pasta de exportação", "pt:nothing-may"),
    ("Mostre o diff e espere a minha aprovação antes de publicar a versão", "pt:ask-first"),
    ("prefira SQLite nos testes, não Postgres", "pt:rather-than"),  # "X, não Y" closing the sentence
    ("vamos ajustar o layout do rodapé depois", "pt:later-vamos"),
])
def test_portuguese_rules_of_the_kinds_english_has(text, cue):
    assert [c for _, _, c in read(text)] == [cue]


@pytest.mark.parametrize("text", [
    "não consegui rodar os testes",  # a report: "I couldn't", not an order
    "não sei qual versão está instalada",
    "isso não funciona no Safari",  # a description in the indicative
    "a build quebrou, não?",  # a question
    "não precisa alterar o README",  # no need
])
def test_portuguese_near_misses_are_not_read(text):
    assert read(text) == []


def test_a_latin_clause_that_opens_with_a_negation_is_a_rule_of_its_own():
    # "use A, não usar B": the negated clause, not the whole run-on sentence
    assert [t for t, _, _ in read("Usar UUID para as chaves, não usar sequências numéricas")] == [
        "não usar sequências numéricas"]


@pytest.mark.parametrize("text, cue", [
    ("Wir sollten verhindern, dass der Cache bei jedem Start neu gebaut wird.", "de:prevent"),
    ("Stelle sicher, dass die alten Exporte nicht überschrieben werden.", "de:prevent"),
    ("Die Logs sollten nicht im Repo landen, sondern im Bucket.", "de:rather-than"),
    ("Zeig mir die Optionen, bevor ich mich entscheide.", "de:ask-first"),
    ("Ich entscheide, wann die Migration läuft.", "de:ask-first"),
])
def test_german_rules_of_the_kinds_english_has(text, cue):
    assert [c for _, _, c in read(text)] == [cue]


def test_german_near_misses_and_a_wish_about_the_users_own_time_are_not_precise():
    assert read("Das Problem ist nicht der Server, sondern der Client.") == []  # a diagnosis: no modal
    assert read("Ich wollte nicht so lange warten.") == []  # a past wish
    # "ich will nicht ..." is read, but low: it states a wish about the user's own work as often as a rule
    assert read("Ich will nicht jeden Tag dieselben Fehler suchen.", precision="precise") == []
    assert [c for _, _, c in read("Ich will nicht jeden Tag dieselben Fehler suchen.")] == ["de:dont-want"]


@pytest.mark.parametrize("text, cue", [
    ("sin inventar endpoints nuevos para la búsqueda", "es:sin-infinitive"),
    # a short answer, read in its message's language
    ("Perfecto, gracias por el resumen de la búsqueda.\nsí, sin emojis", "es:sin-infinitive"),
    ("Esto solo debe generar el informe, no enviarlo por correo.", "es:rather-than"),
    ("antes de empezar, explícame el plan", "es:look-first"),
])
def test_spanish_rules_of_the_kinds_english_has(text, cue):
    assert [c for _, _, c in read(text)] == [cue]


def test_russian_no_need_to_act_opening_a_sentence_is_a_refusal_and_a_modal_contrast():
    assert [c for _, _, c in read("Не нужно переписывать тесты, просто почини сборку.")] == ["ru:no-need-act"]
    assert [c for _, _, c in read("всё проверено, и не нужно запускать миграции повторно")] == ["ru:no-need-act"]
    assert [c for _, _, c in read("Кэш должен быть не глобальным, а на пользователя.")] == ["ru:rather-than"]
    assert read("Не нужно менять миграции?") == []  # a question
    assert read("Проблема не в сервере, а в клиенте.") == []  # a diagnosis, no modal


def test_russian_sentences_are_cut_at_their_full_stops():
    text = "Сборка упала вчера вечером. Не трогайте конфиг деплоя."
    assert [t for t, _, _ in read(text)] == ["Не трогайте конфиг деплоя."]


@pytest.mark.parametrize("text, cue", [
    ("这个页面就不应该弹出提示框", "zh:should-not"),
    ("詳情頁不該顯示刪除按鈕", "zh:should-not"),  # zh-Hant
    ("我又不想再加一个依赖", "zh:dont-want"),
    ("不动 utils 目录", "zh:keep-as-is"),
    ("旧的迁移脚本不需要改动", "zh:no-change-needed"),
    ("导出功能暂时不需要", "zh:later"),  # not yet: a deferral, not "no need"
])
def test_chinese_should_not_keep_and_not_yet_kinds(text, cue):
    assert [c for _, _, c in read(text)] == [cue]


def test_chinese_no_need_without_a_topic_is_still_no_rule():
    assert read("不需要") == [] and read("你不需要修改这个文件。") == [] and read("不需要改这个") == []


def test_japanese_keep_as_is_and_a_closing_not_needed_read_at_its_level():
    assert [c for _, _, c in read("ヘッダーは現状のままで")] == ["ja:keep-as-is"]
    # "X は不要。" refuses X; low: a summary carries it by saying X was dropped (1 right, 1 wrong on the folds)
    assert read("ログの出力は不要。", precision="precise") == []
    assert [c for _, _, c in read("ログの出力は不要。")] == ["ja:not-needed"]
    assert read("この確認は不要ですか？") == []


def test_a_benefit_stated_with_and_avoid_is_no_rule_but_a_wish_or_an_order_with_it_is():
    assert read("This keeps the disk small and avoids needless duplicate uploads.") == []
    assert read("That way we save bandwidth and avoid redundant image copies.") == []
    assert [t for t, _, _ in read("We should compress the images and avoid redundant copies.")] == [
        "avoid redundant copies"]


def test_a_complaint_about_the_users_own_time_or_tokens_is_no_rule():
    assert read("Stop wasting my afternoons on the same setup steps.") == []
    assert read("no guessing and less waste of my credits this time") == []
    assert [c for _, _, c in read("No more guessing at the API shape.")] != []  # the same form, about the work


def test_a_short_rule_with_an_explicit_exception_alerts_only_from_balanced():
    summary = ("1. Primary Request and Intent:\n   Fix the login test.\n\n6. All user messages:\n"
               "   - \"Fix the flaky login test.\"\n")
    rule = "Never run the full suite unless I say so."
    assert judge_one(rule, summary) == [(rule[:-1], True, "below-precision:not-quoted-conditional")]
    assert judge_one(rule, summary, precision="balanced") == [(rule[:-1], False, "not-quoted-conditional")]
    plain = "Never run the full suite on my laptop."
    assert judge_one(plain, summary) == [(plain[:-1], False, "not-quoted-no-trace")]  # no exception: precise


# --------------------------------------------------------------------------- round 12 (2026-12-07)
# Sentences written for these tests, of the shapes the folds showed (no session's words).


@pytest.mark.parametrize(
    "text, rule, cue",
    [
        ("I don't want to add a second database.", "I don't want to add a second database", "dont-want-to"),
        ("We don't want to lose the old logs if the migration fails.",
         "We don't want to lose the old logs if the migration fails", "dont-want-to"),
        ("fix the parser. C89. no VLAs.", "no VLAs", "no-x-beside-instruction"),
        ("ok just push it, no long commit message", "no long commit message", "no-x-beside-instruction"),
        ("the cache layer should be stored in redis, not in a local json file",
         "the cache layer should be stored in redis, not in a local json file", "contrast-requirement"),
        ("ehh nah lets save the refactor for another day.", "ehh nah lets save the refactor for another day",
         "defer-marker"),
    ],
)
def test_round_12_forms_are_read_at_the_precise_level(text, rule, cue):
    assert (rule, cue) in [(t, c) for t, _, c in read(text, precision="precise")]


@pytest.mark.parametrize(
    "text",
    [
        "I don't want to spend too long on this.",  # the user's own effort
        "I don't want a long answer",  # a wish about the reply, no action
        "looks good, ship it. no thanks",  # a conversational "no"
        "ok merge it. no it is fine",
        "it should be fine, not a problem",
        "keep this for later reference",  # kept for use, not put off
        "save it for the next step",
    ],
)
def test_round_12_forms_leave_their_look_alikes_unread(text):
    assert read(text, precision="precise") == []


def test_a_short_line_in_the_sessions_language_is_read_in_it_when_the_identifier_says_english():
    # a Portuguese user's "let's do the backend deploy later": the identifier calls it English (deploy, do, backend)
    later = Candidate("c#1", "Vamos fazer o deploy do backend depois", "typed")
    others = [Candidate(f"c#{n}", t, "typed") for n, t in enumerate(
        ["Olá, preciso que você revise os arquivos do projeto e me diga o que encontrou",
         "Agora crie um plano para a migração dos dados antigos para a nova estrutura"], 2)]
    judge = RulesJudge()
    assert judge_rules.session_language([later, *others]) == "pt"
    assert judge.instructions(later) == []  # alone: English, no rule
    got = RulesJudge().judge([later, *others], None)
    assert [(i.text, i.cue) for i in got.in_force] == [("Vamos fazer o deploy do backend depois", "pt:later-vamos")]
    assert judge_rules.session_language([later]) == "en"


def test_a_portuguese_contrast_with_a_number_corrects_a_fact_and_is_no_rule():
    pt = [Candidate("c#2", "Olá, preciso que você revise os arquivos do projeto e me diga o que encontrou", "typed")]
    for text, rules in [("usamos yarn, nao npm", ["usamos yarn, nao npm"]),
                        ("a versao do node aqui e a 20, nao 18", [])]:
        got = RulesJudge().judge([Candidate("c#1", text, "typed"), *pt], None)
        assert [i.text for i in got.in_force] == rules, text


def test_chinese_maintain_keeps_a_thing_only_as_it_is_not_a_quality_asked_for():
    assert [c for _, _, c in read("把现有的配置文件保持不动", precision="precise")] == ["zh:keep-as-is"]
    assert [c for _, _, c in read("这里还是保持现在的写法", precision="precise")] == ["zh:keep-as-is"]
    for quality in ("界面保持简洁。", "命名与后端保持一致", "保持良好的可读性"):
        assert read(quality, precision="precise") == [], quality


@pytest.mark.parametrize("text", ["用yarn", "尽量用uv", "use the scripts in the tools directory instead",
                                  "just use uv", "usa o yarn"])
def test_a_tool_rejection_that_names_what_to_use_is_a_contrast_against_what_was_tried(text):
    assert [(t, f, c) for t, f, c in read(text, channel="rejection", precision="precise")] == [
        (text, "contrastive", "rejection-use")]
    assert read(text, channel="typed", precision="precise") == []  # typed, "use X" is a plain request


@pytest.mark.parametrize("text", ["why not use yarn?", "you used the wrong file, check the logs first and tell me"])
def test_a_tool_rejection_that_asks_or_explains_names_no_alternative(text):
    assert [c for _, _, c in read(text, channel="rejection", precision="precise")] != ["rejection-use"]


def test_everything_but_x_excludes_x_and_everything_but_x_works_reports():
    assert [c for _, _, c in read("Everything but the flaky tests.", precision="precise")] == ["all-but"]
    assert [c for _, _, c in read("fix all except the migrations", precision="precise")] == ["all-but"]
    assert read("everything but the login works", precision="precise") == []


@pytest.mark.parametrize("lang, text", [
    ("it", "scrivi un riepilogo breve (non tutto il log)"),
    ("pt", 'usar nomes claros (user_count, não "n", etc)'),
    ("de", "schreib die Tests mit pytest (nicht unittest)"),
])
def test_a_parenthetical_negation_on_an_instruction_is_a_contrast_in_every_latin_table(lang, text):
    table = cues.FOREIGN[lang]
    assert [c.name for c, pattern in table.instruction if pattern.search(text)][-1:] == ["paren-not"]
    assert not any(c.name == "paren-not" and pattern.search("vedi il file (non so dove sia)")
                   for c, pattern in cues.FOREIGN["it"].instruction)


@pytest.mark.parametrize("text, name", [
    ("Les fichiers de migration ne doivent PAS être modifiés", "must-not"),
    ("Si un test échoue, arrête-toi et me le signaler avant de continuer.", "ask-first"),
    ("Fais le plan, puis attendre ma validation", "ask-first"),
])
def test_french_requirements_and_stops_before_going_on_are_read(text, name):
    assert name in [c.name for c, pattern in cues.FOREIGN["fr"].instruction if pattern.search(text)]


def test_an_exhortation_to_be_careful_is_not_read_as_a_rule_about_the_work():
    for said in ("Don't miss anything, store the whole design", "don't make any mistakes and check it against the code",
                 "never forget a thing", "please do not hallucinate", "don't lose any details"):
        assert read(said, "typed", precision="recall") == [], said
    for rule in ("don't miss the deadline for the release notes", "don't skip any steps of the migration",
                 "don't make changes to the schema", "don't lose the user's drafts"):
        assert [c for _, _, c in read(rule, "typed", precision="recall")] == ["neg-imperative"], rule


def test_a_bare_dont_assume_is_an_exhortation_but_not_one_with_an_object():
    assert read("Don't assume.", "typed") == []
    assert [c for _, _, c in read("don't assume the API is stable", "typed")] == ["neg-imperative"]


def test_claude_codes_permission_menu_pasted_with_a_screen_is_not_a_rule():
    screen = "The display is garbled:\n   Run the build\n   1. Yes\n   2. Yes, and don’t ask again for: cargo build:*\n"
    assert read(screen, "typed") == []
    typed = "don't ask again for approval before you run the tests"  # typed, not the menu's words
    assert [c for _, _, c in read(typed, "typed")] == ["neg-imperative"]


def test_dutch_rules_are_read_by_their_own_table_and_descriptions_are_not():
    said = {t: [(f, c) for _, f, c in read(t, "typed")] for t in (
        "Geen API keys in code", "verander de database niet", "Je mag nooit de main branch pushen.",
        "Laat de API zoals het is.", "Wacht op mijn akkoord voordat je commit.", "Voorlopig niet deployen.")}
    assert said == {
        "Geen API keys in code": [("explicit", "nl:geen")],
        "verander de database niet": [("explicit", "nl:neg-imperative")],
        "Je mag nooit de main branch pushen.": [("explicit", "nl:must-not")],
        "Laat de API zoals het is.": [("preserve", "nl:keep-as-is")],
        "Wacht op mijn akkoord voordat je commit.": [("restraint", "nl:ask-first")],
        "Voorlopig niet deployen.": [("defer", "nl:later")],
    }
    for text in ("Het werkt niet op mijn laptop.", "Geen idee waarom het faalt.", "Werkt het niet?",
                 "Misschien moeten we geen cache gebruiken.", "Dat hoeft niet."):
        assert read(text, "typed") == [], text
    j = RulesJudge().judge([Candidate("c#0", "Geen API keys in code", "typed")], "Summary.")
    assert j.skipped_languages == () and j.unread == ()


def test_a_long_messages_rule_in_another_language_than_the_summary_is_no_precise_drop_when_unquoted():
    own = ("Parece certo no geral; notas abaixo.\n\n"
           + "- o laço de repetição parece certo para mim, pode seguir com essa parte\n" * 8
           + "- Não altere as taxas de câmbio em cache.\n- os testes podem esperar até o fim\n")
    english = ("This session is being continued.\n\n## 1. Primary Request and Intent:\n   The user wants the totals "
               'row.\n## 6. All user messages:\n   - "now the totals row"\n')
    portuguese = ("Esta sessão continua.\n\n## 1. Solicitação principal e intenção do usuário:\n   O usuário quer a "
                  'linha de totais.\n## 6. Todas as mensagens do usuário:\n   - "agora a linha de totais"\n')
    rule = "Não altere as taxas de câmbio em cache."
    # an English summary paraphrases a Portuguese rule in English, where its words cannot be followed
    assert judge_one(own, english) == [(rule, True, "below-precision:not-quoted-long")]
    assert judge_one(own, english, precision="recall") == [(rule, False, "not-quoted-long")]
    assert judge_one(own, portuguese) == [(rule, False, "not-quoted-long-own")]  # the rule's language: a drop


# --------------------------------------------------------------------------- round 14 (2026-12-08)
# Sentences written for these tests, of the shapes the folds showed (no session's words).


@pytest.mark.parametrize(
    "text, rule",
    [
        ("I dont want the progress bar, the sound effects, etc.",
         "I dont want the progress bar, the sound effects, etc"),
        ("We don't want any of the legacy adapters added at this point.",
         "We don't want any of the legacy adapters added at this point"),
        ("I don't need or want changes to the model files.", "I don't need or want changes to the model files"),
        ("I DONT NEED LOGGING IN MY SCRIPTS", "I DONT NEED LOGGING IN MY SCRIPTS"),
    ],
)
def test_a_wish_against_a_thing_is_a_precise_rule(text, rule):
    assert read(text, precision="precise") == [(rule, "explicit", "dont-want-thing")]


@pytest.mark.parametrize(
    "text",
    [
        "I don't want it",  # a pronoun: the thing is in the conversation, not the rule
        "I don't need help",
        "I don't want a long answer",  # about the reply, not the work
        "I don't need a detailed explanation",
        "maybe I don't want the banner",  # hedged
        "do we not need the cache?",
    ],
)
def test_a_wish_against_a_thing_leaves_its_look_alikes_unread(text):
    assert read(text, precision="precise") == []


def test_korean_spoken_negative_imperatives_are_read_and_a_request_and_a_nouns_ji_are_not():
    said = {t: [c for _, _, c in read(t, precision="precise")] for t in (
        "너무 길게 설명하진 말어", "설정 파일은 수정하지말어", "로그는 지우지 마세요", "테스트 파일은 바꾸면 안돼",
        "페이지 마지막 부분을 고쳐줘", "파일 이름 앞에 날짜를 넣어주면 안돼", "그건 하지마요",
        "커밋하지 마시고 먼저 보여줘", "사진 마음에 들어요")}
    assert said == {
        "그건 하지마요": ["ko:neg-imperative"],  # polite 마요
        "커밋하지 마시고 먼저 보여줘": ["ko:neg-imperative"],
        "사진 마음에 들어요": [],  # 사진 (a photo) before 마음 (liking): no 진 말 form
        "너무 길게 설명하진 말어": ["ko:neg-imperative"],
        "설정 파일은 수정하지말어": ["ko:neg-imperative"],
        "로그는 지우지 마세요": ["ko:neg-imperative"],
        "테스트 파일은 바꾸면 안돼": ["ko:must-not"],
        "페이지 마지막 부분을 고쳐줘": [],  # a noun's 지 before 마지막 ("the last part of the page")
        "파일 이름 앞에 날짜를 넣어주면 안돼": [],  # "V어 주면 안 돼?": can you V for me, a request
    }


def test_a_japanese_request_not_to_v_is_read_for_any_verb_not_only_suru():
    said = {t: [c for _, _, c in read(t, precision="precise")] for t in (
        "この画面では古い API を使わないようにしてください。", "この関数は削除しないようにして",
        "ファイルを消さないようにしてもらえますか？")}
    assert said == {"この画面では古い API を使わないようにしてください。": ["ja:not-to-do"],
                    "この関数は削除しないようにして": ["ja:not-to-do"],
                    "ファイルを消さないようにしてもらえますか？": []}  # asked: a question


@pytest.mark.parametrize(
    "text, rule",
    [("only use the staging data.", "only use the staging data"),
     ("Only ask if missing info blocks progress.", "Only ask if missing info blocks progress"),
     ("please only touch the parser module", "only touch the parser module")],
)
def test_only_and_an_action_said_as_an_order_is_a_limit(text, rule):
    assert read(text, precision="precise") == [(rule, "explicit", "only-imperative")]


@pytest.mark.parametrize("text", ["only two tests failed", "Only the root is left.", "It only runs once.",
                                  "only use it if you have to?"])
def test_only_in_a_report_or_a_question_is_no_limit(text):
    assert read(text, precision="precise") == []
