"""The prohibition extractor and matcher (stream.adapters.prohibitions).

Every sentence here is written for these tests. Each false-alarm class the real logs
showed (descriptions, possibility, opinions, questions, clauses cut at "but", sentences
glued before a lower-case word, pasted tool output, review quotes, diffs and code) and
each miss class (no cue word, the extra forms) has its own test with the prohibitions
expected — exactly, so a test fails on a prohibition too many as on one too few.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stream.adapters.prohibitions import (
    FORMS,
    ProhibitionMatcher,
    content_words,
    make_prohibition,
    sentences,
)

pytestmark = pytest.mark.unit

M = ProhibitionMatcher()


def found(text: str, source: str = "user") -> list[str]:
    return [p.text for p in M.prohibitions(text, source=source)]


def forms(text: str, source: str = "user") -> list[tuple[str, str]]:
    return [(p.form, p.text) for p in M.prohibitions(text, source=source)]


# --------------------------------------------------------------------------- what is a prohibition


def test_imperative_negations_addressed_to_the_agent_are_prohibitions():
    assert found("Don't touch the migrations folder.") == ["Don't touch the migrations folder"]
    assert found("please do not push to main") == ["do not push to main"]
    assert found("DON'T DELETE THE BRANCH") == ["DON'T DELETE THE BRANCH"]
    assert found("Never use force-push on shared branches.") == ["Never use force-push on shared branches"]
    assert found("You must not change the public API.") == ["You must not change the public API"]
    assert found("We shouldn't add a new dependency for this.") == ["We shouldn't add a new dependency for this"]
    assert found("Avoid global state.") == ["Avoid global state"]
    assert found("Stop adding comments everywhere.") == ["Stop adding comments everywhere"]
    assert found("Leave the legacy parser alone.") == ["Leave the legacy parser alone"]
    assert found("let's not rename the package yet") == ["let's not rename the package yet"]
    assert found("Make sure you don't break the build.") == ["Make sure you don't break the build"]
    assert found("I don't want you to touch the lockfile.") == ["I don't want you to touch the lockfile"]


def test_a_prohibition_after_a_discourse_marker_or_a_condition_is_found():
    assert found("no don't set it, let's see if it comes back") == ["don't set it"]
    assert found("ok. also don't rename anything.") == ["don't rename anything"]
    assert found("Fix the bug but don't change the tests") == ["don't change the tests"]
    assert found("Write it to a scratch file, don't commit.") == ["don't commit"]
    assert found("If the build fails, don't retry more than twice.") == ["If the build fails, don't retry more than twice"]


def test_no_with_a_gerund_and_a_parenthesized_no_are_prohibitions():
    assert found("keep every commit green please (no committing half-done work)") == ["no committing half-done work"]
    assert found("**Shared helpers** (no copy-paste):", source="plan") == ["no copy-paste"]


def test_no_x_is_a_decision_in_a_list_of_instructions_or_decisions_but_not_a_description():
    plan = ("## Step 2: Wire the cache\n\n1. Add `Cache.get` to `store.py`\n2. Call it from the handler\n"
            "3. No eviction policy, no TTL\n")
    assert found(plan, source="plan") == ["No eviction policy", "no TTL"]
    typed = "read the notes for the design decisions (no retries, no background sync, defer metrics)"
    assert forms(typed) == [("explicit", "no retries"), ("explicit", "no background sync"), ("defer", "defer metrics")]
    # the same words describing what happens are not a decision
    effects = ("## How it works\n\nThe flag turns every hook off. This means:\n- No hook fires after the import\n"
               "- No retry, no loop\n- The files stay where they are\n")
    assert found(effects, source="plan") == []
    assert found("No errors in the output.") == []
    assert found("No new dependencies.") == ["No new dependencies"]  # refusing an addition


def test_every_item_of_a_list_of_things_not_to_do_is_a_prohibition():
    plan = "## Out of scope\n- Offline mode\n- Sharing links, for now\n\n## Steps\n1. Add the cache\n"
    assert found(plan, source="plan") == ["Out of scope: Offline mode", "Out of scope: Sharing links, for now"]
    assert found("For this task. Don't:\n- add endpoints\n- touch the schema") == [
        "Don't: add endpoints", "Don't: touch the schema"]
    assert found("## Overview\n- The cache\n- The store") == []
    assert found("**Must NOT:**\n- log plaintext\n\n**Constraints:**\n- No server-side decryption", source="plan") == [
        "Must not: log plaintext", "No server-side decryption"]  # bold lead-ins read like plain ones


def test_a_requirement_on_a_thing_is_a_prohibition():
    assert found("The token should not be logged.") == ["The token should not be logged"]
    assert found("it needs no version field in the header") == ["it needs no version field in the header"]


# --------------------------------------------------------------------------- false-alarm classes


def test_descriptions_of_behaviour_are_not_prohibitions():
    assert found("The variable is never reassigned.") == []
    assert found("The old code did not check for nil, so it crashed.") == []
    assert found("Never seen this error before.") == []
    assert found("Never fails on my machine.") == []
    assert found("The retry loop doesn't stop on errors, so we never see them.") == []


def test_possibility_and_non_necessity_are_not_prohibitions():
    assert found("this may not be exercised in practice") == []
    assert found("You don't have to run the full suite.") == []
    assert found("There's no need to restart the server.") == []
    assert found("No version bump needed.") == []
    assert found("You shouldn't need to restart.") == []


def test_opinions_dismissals_and_reassurance_are_not_prohibitions():
    assert found("I don't think the reviewer meant that.") == []
    assert found("Don't worry about the lint warnings.") == []
    assert found("never mind, it works now") == []
    assert found("let's not worry too much about Windows") == []
    assert found("no wait") == []


def test_questions_are_not_prohibitions_unless_they_ask_for_a_negative_action():
    assert found("Is there any reason we don't parse the header first?") == []
    assert found("shouldn't the cache be cleared here?") == []
    assert found("Why don't we cache it?") == []
    assert found("can we not add emojis to the docs?") == ["can we not add emojis to the docs?"]


def test_a_clause_cut_at_but_keeps_its_negation_with_its_own_subject():
    assert found("we use `git add` but don't change the local folder tree") == []  # *we* don't: a description
    assert found("Use `git add` but don't change the folder tree") == ["don't change the folder tree"]
    assert found("I need you to fix the tests but don't touch the fixtures") == ["don't touch the fixtures"]
    assert found("it works but don't ship it yet") == ["don't ship it yet"]  # "it don't": no shared subject
    assert found("it compiles but never runs") == []


def test_sentences_glued_before_a_lower_case_word_are_split():
    assert sentences("keep it local! let's go on") == ["keep it local!", "let's go on"]
    assert sentences("It reads cli.go. don't touch it") == ["It reads cli.go.", "don't touch it"]
    assert sentences("use it, e.g. for tests. fine") == ["use it, e.g. for tests.", "fine"]
    assert sentences("see `a.b()` and v1.2 here.") == ["see `a.b()` and v1.2 here."]
    assert found("that is fine. don't rename it though") == ["don't rename it though"]


def test_pasted_tool_output_logs_and_code_are_not_read():
    text = ("the build said:\n```\nerror: do not use floats for money\n```\n"
            "$ make lint\nwarning: never call exit() in a library\n"
            '{"level":"DEBUG","msg":"do not retry"}\n'
            "    // Do not edit: generated\n"
            "what does it want?")
    assert found(text) == []


def test_quoted_review_comments_and_diffs_are_not_read():
    text = ("> Don't return nil here, return an error.\n> Avoid the extra allocation.\n"
            "--- a/store.go\n+++ b/store.go\n@@ -1,3 +1,3 @@\n"
            "can you address this comment?")
    assert found(text) == []


def test_a_pasted_bot_review_and_a_quote_with_its_indented_continuation_are_not_read():
    review = ("Cache is never invalidated\n\nMedium Severity\n\nThe entry should not be reused after a write. "
              "Avoid reading it twice.\n\nFix in Cursor\n\nplease fix it, but don't change the cache API")
    assert found(review) == ["don't change the cache API"]
    echoed = "> v main [3 items]\n   v * don't rename the table - keep all the column names\nwhy is this shown twice?"
    assert found(echoed) == []
    assert found('the reviewer wrote: "Don\'t shadow err here"') == []


def test_wrapper_tags_are_dropped_and_slash_command_arguments_are_read():
    text = ("<command-message>review</command-message>\n<command-name>/review</command-name>\n"
            "<command-args>focus on the parser, never rewrite the lexer</command-args>")
    assert found(text) == ["never rewrite the lexer"]
    assert found("<bash-stdout>do not panic: all good</bash-stdout>") == []
    assert found("[Request interrupted by user]") == []


def test_a_plan_section_that_describes_contributes_only_explicit_imperatives():
    plan = ("# Plan\n\n## Context\n\nNo caching exists today. The handler never checks the size.\n\n"
            "## Verification\n\n- No warning in the log\n- Don't skip the slow tests\n")
    assert found(plan, source="plan") == ["Don't skip the slow tests"]


# --------------------------------------------------------------------------- miss classes and extra forms


def test_prohibitions_without_a_negation_cue_are_found_in_their_forms():
    assert forms("intentional - keep it local!") == [("preserve", "keep it local")]
    assert forms("keep all the spacing tweaks we made") == [("preserve", "keep all the spacing tweaks we made")]
    assert forms("Keep `parse_legacy()` for old callers", source="plan") == [
        ("preserve", "Keep `parse_legacy()` for old callers")]
    assert forms("no, ignore this part, back to the import bug") == [("implicit", "no, ignore this part")]
    assert forms("ok, do nothing") == [("implicit", "ok, do nothing")]
    assert forms("yes, but we don't need to tag a release") == [("implicit", "yes, but we don't need to tag a release")]


def test_contrastive_directives_forbid_their_negated_part():
    assert forms("we should summarize the checkpoint only, not the whole session log") == [
        ("contrastive", "we should summarize the checkpoint only, not the whole session log")]
    assert forms("it would be good to log the load, but not copy all of its contents") == [
        ("contrastive", "it would be good to log the load, but not copy all of its contents")]
    assert forms("Like not starting from the old bug but write it as a feature doc.") == [
        ("contrastive", "not starting from the old bug")]
    assert found("It's cached, not recomputed.") == []  # a description, not a directive
    assert found("I meant the second file, not the first.") == []


def test_deferrals_and_restraints_need_an_explicit_marker():
    assert forms("let's leave the dashboard for later") == [("defer", "let's leave the dashboard for later")]
    assert forms("defer file locking") == [("defer", "defer file locking")]
    assert found("just manual mode for now") == []  # a deferral without a marker
    assert found("Defer until the lock is released.") == []  # behaviour, not a deferral
    assert forms("update the doc, then I'll instruct the next steps") == [
        ("restraint", "I'll instruct the next steps")]
    assert forms("merge it? no, I'll do that manually.") == [("restraint", "I'll do that manually")]
    assert forms("ask me before deleting anything") == [("restraint", "ask me before deleting anything")]
    assert found("I'll check the logs and tell you.") == []


def test_keeping_a_placement_or_a_style_is_not_a_prohibition():
    assert found("keep it in the repo") == []
    assert found("let's keep it simple for now") == []
    assert found("keep in mind the tests are slow") == []


def test_the_forms_extracted_can_be_restricted():
    only = ProhibitionMatcher(forms=frozenset({"explicit"}))
    assert [p.text for p in only.prohibitions("keep it local! and don't push")] == ["don't push"]
    with pytest.raises(ValueError, match="unknown prohibition form"):
        ProhibitionMatcher(forms=frozenset({"wishful"}))
    assert set(FORMS) == {"explicit", "preserve", "contrastive", "defer", "restraint", "implicit"}


def test_every_prohibition_carries_its_source_form_and_origin_on_the_wire():
    [p] = M.prohibitions("Never edit the lockfile.", source="plan", origin=("line", 12))
    assert p.as_wire() == {"id": p.id, "text": "Never edit the lockfile", "source": "plan", "form": "explicit", "line": 12}
    assert p.id == make_prohibition("never  EDIT the lockfile").id  # the id is a hash of the normalized text


# --------------------------------------------------------------------------- carrying


def test_a_summary_carries_a_prohibition_verbatim_or_with_a_cue_and_enough_key_words():
    p = make_prohibition("Do not run the database migrations.")
    assert M.carries("Notes: \"Do not run the database migrations.\"", p)
    assert M.carries("The user asked us never to run database migrations.", p)
    assert not M.carries("We ran the database migrations.", p)  # no negation cue
    assert not M.carries("Never touch the database.", p)  # 1 of 3 key words


def test_the_key_of_a_prohibition_leaves_out_its_markers_and_parenthesized_reason():
    p = make_prohibition("Also don't fire the commit event (it confuses the state machine).")
    assert M.carries("It updates the base commit without firing the commit event.", p)


def test_a_preserve_form_is_carried_by_a_keep_without_a_negation():
    p = make_prohibition("keep the grouping by session (should be default)", form="preserve")
    assert M.carries("Keep grouping by session as default.", p)
    assert not make_prohibition("keep the grouping by session").form == "preserve" or not M.carries(
        "Grouping by session as default.", make_prohibition("keep the grouping by session"))


def test_the_matcher_documented_false_alarm_and_miss():
    p = make_prohibition("Do not modify the generated client code.")
    # false alarm: a faithful paraphrase with synonyms does not count as carried
    assert not M.carries("The user said never to change the auto-generated API code.", p)
    # miss: a different prohibition over the same words counts as carried
    assert M.carries("Do not forget to modify the generated client code.", p)
    assert ProhibitionMatcher(threshold=0.0).carries("There is no news.", p)  # any negated sentence
    with pytest.raises(ValueError, match=r"match threshold must be in \[0, 1\]"):
        ProhibitionMatcher(threshold=1.5)


def test_the_threshold_decides_how_loose_a_paraphrase_may_be():
    p = make_prohibition("Don't edit the generated files in src/gen/ by hand.")
    summary = "The user forbade editing generated files in src/gen/ manually."  # 4 of 5 key words
    assert ProhibitionMatcher(threshold=0.8).carries(summary, p)
    assert not ProhibitionMatcher(threshold=0.9).carries(summary, p)


def test_content_words_drop_cues_and_reporting_verbs_and_stem_with_snowball():
    assert content_words("The user asked us not to edit files under src/gen/.") == {"edit", "file", "src/gen"}
    assert content_words("firing") == content_words("fire") == {"fire"}


# --------------------------------------------------------------------------- any text


_PIECES = list("abcdefgno tk'\".,;:!?()-*_`>#|\n") + [
    "don't ", "not ", "no ", "never ", "keep ", "```\n", "\n- ", "let's ", "but ", "(no ", "it ", "we should "]
_ANY_TEXT = st.lists(st.sampled_from(_PIECES), max_size=80).map("".join) | st.text(max_size=200)


@settings(max_examples=300, deadline=None)
@given(_ANY_TEXT, st.sampled_from(["user", "plan", "rule_file", "system"]))
def test_any_text_gives_deterministic_prohibitions_whose_ids_hash_their_text(text, source):
    first = M.prohibitions(text, source=source)
    assert first == M.prohibitions(text, source=source)
    for p in first:
        assert p.text.strip() and p.source == source and p.form in FORMS
        assert p.id == make_prohibition(p.text).id
        assert M.carries(p.text, p)  # a prohibition's own words carry it
    assert len({p.id for p in first}) == len(first)
