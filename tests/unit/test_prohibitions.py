"""The prohibition extractor and matcher (stream.adapters.compaction.prohibitions).

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

from stream.adapters.compaction.prohibitions import (
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
    assert found("If the build fails, don't retry more than twice.") == [
        "If the build fails, don't retry more than twice"
    ]


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
    assert p.as_wire() == {
        "id": p.id,
        "text": "Never edit the lockfile",
        "source": "plan",
        "form": "explicit",
        "line": 12,
    }
    assert p.id == make_prohibition("never  EDIT the lockfile").id  # the id is a hash of the normalized text


def test_a_line_opening_with_ok_go_or_note_is_the_users_own_words_not_tool_output():
    assert found("ok next one. stop renaming the fixtures") == ["stop renaming the fixtures"]
    assert found("go ahead, but don't merge it") == ["don't merge it"]
    assert found("note the cache is cold. never flush it by hand") == ["never flush it by hand"]
    # an output prefix is followed by ":", a tab, two spaces or the end of the line
    assert (
        found("ok  \tpkg/store\t0.41s\nFAIL\tpkg/api\t1.2s\nnpm ERR! do not run as root\ngo: do not use go get") == []
    )


def test_a_comma_before_a_new_subject_or_a_new_imperative_ends_a_clause():
    assert found("leave the vendored copy alone, it comes from upstream") == ["leave the vendored copy alone"]
    assert found("never drop the index, this table is huge") == ["never drop the index"]
    assert forms("the parser is slow, use the cached table not the raw dump") == [
        ("contrastive", "use the cached table not the raw dump")]
    assert found("don't add, remove or rename routes") == ["don't add, remove or rename routes"]  # a list of verbs


def test_a_question_is_judged_per_clause_the_one_that_asks():
    assert found("Two things: I'd rather you didn't touch the cron file, and could you avoid renaming the jobs?") == [
        "I'd rather you didn't touch the cron file", "could you avoid renaming the jobs?"]
    assert found("if we skip the cache, would it be slower?") == []
    assert found("the tests pass, should we not merge now?") == []
    assert found("Can you add the banner, and please do not touch the templates?") == ["do not touch the templates?"]
    # a wh-question asks about all of it: what follows its colon is what it asks about
    assert found("why does the list print this: keep the cache warm and never drop the index?") == []


def test_terse_and_non_native_negations_are_prohibitions():
    assert found("please not delete the seed data") == ["not delete the seed data"]
    assert found("no revert those changes") == []  # "no, revert them" as often as "don't revert them": not read
    assert found("tf plan only. no apply") == ["no apply"]
    assert found("no change.") == []  # a noun: nothing forbidden
    assert found("pls no emojis") == ["no emojis"]
    assert found("no refactors in this PR") == ["no refactors in this PR"]
    assert found("no force pushes on this branch ever") == ["no force pushes on this branch ever"]
    assert found("kindly do not open a PR yet") == ["do not open a PR yet"]
    assert found("It'd be best not to restart the broker yourself") == [
        "It'd be best not to restart the broker yourself"
    ]
    assert found("Try not to reformat unrelated files.") == ["Try not to reformat unrelated files"]


def test_modal_negations_with_any_subject_are_prohibitions_and_predictions_are_not():
    assert found("We won't cache the tokens.") == ["We won't cache the tokens"]
    assert found("The importer must never drop rows.") == ["The importer must never drop rows"]
    assert found("we won't know before Monday") == []
    assert found("you won't believe this") == []
    assert found("this must not be the reason") == []


def test_keeping_as_is_stopping_to_ask_doing_it_myself_and_skipping_for_now_are_their_forms():
    assert forms("About the lockfile, please keep as is.") == [("preserve", "About the lockfile, please keep as is")]
    assert forms("keep the env names unchanged") == [("preserve", "keep the env names unchanged")]
    assert forms("leave the fixtures as they are") == [("explicit", "leave the fixtures as they are")]
    assert forms("I will tag the release myself.") == [("restraint", "I will tag the release myself")]
    assert forms("if the diff touches billing, stop and ask me") == [
        ("restraint", "if the diff touches billing, stop and ask me")]
    assert forms("skip the docs for now") == [("defer", "skip the docs for now")]
    assert forms("NO. i said read only") == [("implicit", "NO. i said read only")]


def test_use_x_not_y_is_contrastive_without_a_comma_and_after_a_leading_phrase():
    assert forms("use the builder not a raw dict") == [("contrastive", "use the builder not a raw dict")]
    assert forms("for the CLI use click, not argparse") == [("contrastive", "for the CLI use click, not argparse")]
    assert forms("Also the cache should be per user, store it in redis not in memory") == [
        ("contrastive", "store it in redis not in memory")]
    assert found("it's not the parser, the lexer never emits EOF") == []


def test_a_no_x_item_or_a_modal_negation_in_a_plans_design_section_is_a_decision():
    plan = "## Design\n- Tokens live in Vault; no secrets in env files.\n- We won't support IPv6 yet.\n"
    assert found(plan, source="plan") == ["no secrets in env files", "We won't support IPv6 yet"]


def test_a_paragraph_announced_as_someone_elses_text_is_not_read():
    text = ("We got this bug report from support:\n\nThe export hangs. Please don't retry the upload forever.\n\n"
            "Can you look? don't change the export format")
    assert found(text) == ["don't change the export format"]
    assert found("Title: Crash on save\nNever call save twice.\n\nfix it but don't touch the UI") == [
        "don't touch the UI"]
    assert found("my notes from yesterday:\ndon't rebase the branch") == ["don't rebase the branch"]


def test_idioms_of_refusal_and_of_keeping_a_thing_as_it_is_are_prohibitions():
    assert found("Do NOT, under any circumstances, touch the prod database.") == ["Do NOT touch the prod database"]
    assert found("Do not, I repeat, do not deploy on Friday.") == ["do not deploy on Friday"]
    assert found("hands off the auth module") == ["hands off the auth module"]
    assert found("I don't want any new dependencies.") == ["I don't want any new dependencies"]
    assert found("I don't want to break them.") == []  # the user's own aim
    assert found("I prefer you don't rename things") == ["I prefer you don't rename things"]
    assert found("Nothing in vendor/ should be edited.") == ["Nothing in vendor/ should be edited"]
    assert forms("the public API must stay the same") == [("preserve", "the public API must stay the same")]
    assert forms("Not in this PR: the refactor of the router.") == [
        ("defer", "Not in this PR: the refactor of the router")
    ]
    assert found("Out of scope: the billing page") == ["Out of scope: the billing page"]


def test_dictated_text_without_punctuation_is_cut_at_fillers_conjunctions_and_a_new_i():
    assert found("ok so um the thing I want is a csv export and uh dont use any csv library just a writer") == [
        "dont use any csv library just a writer"]
    assert found("the raw files are the source of truth so never write into data/raw") == ["never write into data/raw"]
    assert forms("commit it when its green but dont push I wanna rebase it myself first") == [
        ("explicit", "dont push"), ("restraint", "I wanna rebase it myself first")]
    assert found("yeah thats good um leave the billing export alone its used every night") == [
        "leave the billing export alone its used every night"]
    assert found("don't push before I want it") == ["don't push before I want it"]  # not cut after a subordinator


def test_pictograph_bullets_are_list_items_and_pictographs_before_a_rule_are_not_words():
    assert found("rules for the rewrite:\n❌ no `panic!()` in the parser\n✅ a test per fix") == [
        "no `panic!()` in the parser"]
    assert found("🚫 don't rename the `Config::load` function") == ["don't rename the `Config::load` function"]
    assert found("+\t// never close the pool here") == []  # a diff line is pasted code


def test_a_bare_no_x_followed_by_what_to_do_instead_is_a_rule():
    assert found("nit: no `print()` in the package, use logging") == ["no `print()` in the package"]
    assert found("no exceptions across the FFI boundary, return status codes") == [
        "no exceptions across the FFI boundary"
    ]
    assert found("no errors in the log, looks fine") == []


def test_hedged_and_indirect_requests_not_to_do_something_are_prohibitions():
    assert found("I'd rather not spend the afternoon on the migration script.") == [
        "I'd rather not spend the afternoon on the migration script"]
    assert found("It would be great if we could avoid touching the email templates.") == [
        "It would be great if we could avoid touching the email templates"]
    assert found("I'd appreciate it if you didn't add new npm packages without asking.") == [
        "I'd appreciate it if you didn't add new npm packages without asking"]
    assert found("Let's make sure we're not breaking the old /v1 routes.") == [
        "Let's make sure we're not breaking the old /v1 routes"]
    assert found("we probably shouldn't log the request bodies") == ["we probably shouldn't log the request bodies"]
    assert found("I'd rather not think about it now") == []  # a dismissal


def test_wont_do_lists_waiting_and_not_bothering_for_now_are_their_forms():
    assert found("## Won't do\n- Windows support\n- A GUI", source="plan") == [
        "Won't do: Windows support", "Won't do: A GUI"]
    assert forms("wait until CI is green") == [("restraint", "wait until CI is green")]
    assert forms("let's not bother with the docs for now") == [("defer", "let's not bother with the docs for now")]
    assert found("let's not bother, it works") == []


def test_examples_in_parentheses_of_a_rule_are_not_rules_of_their_own():
    assert found("No new dependencies (no left-pad, no lodash).") == ["No new dependencies"]
    assert found("read the notes (no TTL, no retries)") == [
        "no TTL",
        "no retries",
    ]  # no rule outside: they are the rules


def test_a_criterion_in_a_plans_test_section_is_not_a_prohibition_but_an_imperative_there_is():
    plan = "## Test plan\n- Results must not differ by more than 1%.\n- Don't run the soak test in CI\n"
    assert found(plan, source="plan") == ["Don't run the soak test in CI"]


def test_a_tag_asking_for_agreement_does_not_make_a_rule_a_question():
    assert found("Also do not touch the network code, another team owns it, ok?") == [
        "do not touch the network code, another team owns it, ok?"]
    assert found("don't cache the tokens, right?") == ["don't cache the tokens, right?"]
    assert found("is the cache cold, right?") == []


def test_a_rule_stated_about_the_act_or_the_thing_and_a_fronted_thing_are_prohibitions():
    assert found("Changing the save format is forbidden, because old saves must load.") == [
        "Changing the save format is forbidden, because old saves must load"]
    assert found("The billing module is off-limits.") == ["The billing module is off-limits"]
    assert found("Access is forbidden for guests.") == []  # a description of behaviour
    assert found("Version number please not change.") == ["Version number please not change"]


def test_hedged_questions_that_ask_for_a_negative_action_are_prohibitions():
    assert found("should we maybe not change the response shape?") == ["should we maybe not change the response shape?"]
    assert found("is it ok if you don't add the index yourself?") == ["is it ok if you don't add the index yourself?"]
    assert found("the tests pass, should we not merge now?") == []  # suggests merging


def test_a_terse_no_action_yet_and_a_contrast_in_a_constraints_list_are_rules():
    assert found("Also no commit yet. I check first.") == ["no commit yet"]
    assert found("no tests yet") == []  # an outcome
    assert forms("## Constraints\n- Service worker only for static assets, not for API responses.") == [
        ("contrastive", "Service worker only for static assets, not for API responses")]


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
    # a paraphrase sharing only half the key words (the verb by synonym, "code") is uncertain: not alerted by default
    loose = "The user said never to change the auto-generated API code."
    assert M.judge(loose, p) == "uncertain" and M.carries(loose, p)
    assert not ProhibitionMatcher(alert_uncertain=True).carries(loose, p)
    # miss: a different prohibition over the same words counts as carried
    assert M.carries("Do not forget to modify the generated client code.", p)
    assert ProhibitionMatcher(threshold=0.0).carries("There is no news.", p)  # any negated sentence
    with pytest.raises(ValueError, match=r"match threshold must be in \[0, 1\]"):
        ProhibitionMatcher(threshold=1.5)


def test_the_threshold_decides_how_loose_a_paraphrase_may_be():
    p = make_prohibition("Don't edit the generated files in src/gen/ by hand.")
    summary = "The user forbade editing generated files in src/gen/ manually."  # 5 of 6 key words
    assert ProhibitionMatcher(threshold=0.8).judge(summary, p) == "carried"
    assert ProhibitionMatcher(threshold=0.9).judge(summary, p) == "uncertain"
    assert not ProhibitionMatcher(threshold=0.9, alert_uncertain=True).carries(summary, p)


def test_content_words_drop_cues_and_reporting_verbs_and_stem_with_snowball():
    assert content_words("The user asked us not to edit files under src/gen/.") == {"edit", "file", "src", "gen"}
    assert content_words("firing") == content_words("fire") == {"fire"}


def test_a_synonym_of_the_verb_in_a_negated_sentence_carries_the_prohibition():
    p = make_prohibition("Don't touch the billing module.")
    assert M.judge("The billing module must not be modified.", p) == "carried"
    assert M.judge("Nothing in the billing module was edited.", p) == "carried"
    assert M.judge("The billing module was modified to add VAT.", p) == "dropped"  # no negation
    assert M.judge("The tests are not modified.", p) == "dropped"  # not the same thing


def test_saying_the_thing_stays_as_it_was_carries_a_rule_not_to_change_or_remove_it():
    bump = make_prohibition("please don't bump the chart version")
    assert M.judge("Chart version left untouched, as the user asked.", bump) == "carried"
    assert M.judge("The chart version stays at 2.1.", bump) == "carried"
    assert M.judge("Version of the chart: 2.1.", bump) == "dropped"
    # "untouched" next to another thing, in the clause after a ';': not this rule
    assert M.judge("The chart version was bumped; the values file stays untouched.", bump) == "dropped"
    keep = make_prohibition("Keep the existing `LegacyAuth` class until the migration ships", form="preserve")
    assert M.judge("`LegacyAuth` is still in place (to be removed later).", keep) == "carried"  # a code name suffices
    assert M.judge("LegacyAuth was deleted.", keep) == "dropped"


def test_saying_no_x_carries_a_rule_not_to_add_or_use_x_only_when_the_no_governs_x():
    queue = make_prohibition("Let's not introduce a message queue")
    assert M.judge("Jobs run in-process (no message queue).", queue) == "carried"
    assert M.judge("No queue consumer was written yet, the message format is still open.", queue) == "dropped"
    anything = make_prohibition("dont use any")  # a lone stop word is the thing itself
    assert M.judge("Typed everything strictly, no `any`.", anything) == "carried"
    assert M.judge("Continue without asking the user any further questions.", anything) == "dropped"


def test_morphology_paths_hyphens_and_un_participles_are_normalized():
    assert M.judge("the test snapshots must not be deleted",
                   make_prohibition("DO NOT delete the snapshots in tests/__snapshots__")) == "carried"
    assert M.judge("no hardcoded timeouts anywhere", make_prohibition("no hard-coded timeouts")) == "carried"
    commit = make_prohibition("Please don't commit.")
    assert M.judge("The work is left uncommitted for the user to review.", commit) == "carried"
    assert M.judge("Committed as abc123; docs left unformatted.", commit) == "dropped"
    assert content_words("Don't squash when you're done, either") == {"squash"}  # closed-class words are not content


def test_the_users_keeping_the_action_carries_it_and_a_pronoun_reads_the_clause_before():
    p = make_prohibition("It'd be best not to run the reindex yourself")
    assert M.judge("The user will trigger the reindex after the deploy; do not run it.", p) == "carried"
    assert M.judge("Reindex done.", p) == "dropped"


def test_the_key_of_a_prohibition_is_its_rule_not_its_reason_or_its_condition():
    p = make_prohibition("never rename the public topics, consumers subscribe by name")
    assert M.judge("Public topics unchanged (consumers subscribe by name).", p) == "carried"
    q = make_prohibition("Don't squash the commits when you're done")
    assert M.judge("Keep the commit history as is (no squashing).", q) == "carried"


def test_a_prohibition_without_a_thing_is_said_only_by_its_own_verb():
    p = make_prohibition("leave them alone", form="implicit")
    assert M.judge("No schema change in this PR.", p) == "dropped"  # the noun "change" is not "leave alone"
    assert M.judge("Nothing was committed.", make_prohibition("don't commit")) == "carried"


def test_a_partial_match_is_uncertain_only_if_it_shares_the_action():
    p = make_prohibition("dont touch the migrations dir")
    summary = "Do not modify anything under migrations/."  # the verb by synonym and 1 of 2 thing words
    assert M.judge(summary, p) == "uncertain" and M.carries(summary, p)
    assert not ProhibitionMatcher(alert_uncertain=True).carries(summary, p)
    r = make_prohibition("We won't rate-limit internal calls")
    assert M.judge("Internal calls are exempt.", r) == "dropped"  # the nouns without the action


def test_a_deferral_is_carried_by_a_later_cue_on_its_thing():
    p = make_prohibition("let's leave the caching for later", form="defer")
    assert M.judge("Caching deferred to a follow-up.", p) == "carried"
    assert M.judge("Caching works now.", p) == "dropped"


def test_off_limits_and_unchanged_carry_rules_against_touching_or_breaking_the_thing():
    touch = make_prohibition("It would be great if we could avoid touching the email templates")
    assert M.judge("The email templates are off-limits (signed off by design).", touch) == "carried"
    breaking = make_prohibition("Let's make sure we're not breaking the old /v1 routes")
    assert M.judge("The old /v1 routes are unchanged.", breaking) == "carried"
    assert M.judge("The old /v1 routes now return 410.", breaking) == "dropped"
    npm = make_prohibition("I'd appreciate it if you didn't add new npm packages without asking")
    assert M.judge("No new npm packages without the user's approval.", npm) == "carried"


def test_the_key_of_an_item_of_a_list_of_things_not_to_do_is_the_thing():
    p = make_prohibition("Won't do: Windows support")
    assert M.judge("Windows support is out of scope.", p) == "carried"
    assert M.judge("Windows support added.", p) == "dropped"
    q = make_prohibition("Not doing: Dark theme (needs design)")  # the lead, not "not" + a verb "doing"
    assert M.judge("Not doing: i18n, dark theme.", q) == "carried"


def test_a_bound_carries_a_must_not_exceed_rule():
    p = make_prohibition("Bundle size must not grow by more than 20 kB.")
    assert M.judge("The bundle may grow by at most 20 kB.", p) == "carried"
    assert M.judge("The bundle grew by 6 kB.", p) == "dropped"


def test_someone_else_acting_on_the_thing_carries_a_rule_that_the_agent_must_not():
    index = make_prohibition("is it ok if you don't add the index yourself?")
    assert M.judge("The index SQL is in a file for the DBA to apply.", index) == "carried"
    version = make_prohibition("Version number please not change")
    assert M.judge("The version number is left to the release manager.", version) == "carried"
    assert M.judge("Nothing left to do on the version number.", version) == "dropped"


def test_the_dont_column_of_a_typed_table_is_a_list_of_things_not_to_do():
    table = "| Do | Don't |\n|---|---|\n| run the linter | rewrite the changelog |\n| add a test | bump the SDK |"
    assert found(table) == ["Don't: rewrite the changelog", "Don't: bump the SDK"]
    assert found("| Method | What it does |\n|---|---|\n| `drop()` | never retries |") == []  # a table without one


def test_shall_not_and_is_to_remain_are_rules_and_the_same_words_in_a_description_are_not():
    assert found("You shall not regenerate the lockfile.") == ["You shall not regenerate the lockfile"]
    assert found("The agent shall not open pull requests.") == ["The agent shall not open pull requests"]
    assert forms("The wire format is to remain unchanged.") == [("preserve", "The wire format is to remain unchanged")]
    assert found("The seed data is not to be edited.") == ["The seed data is not to be edited"]
    assert found("The assistant is not to blame for the outage.") == []
    assert found("The old endpoint is to be retired in May.") == []
    assert found("You don't need to regenerate the lockfile.") == []


def test_a_bare_no_x_beside_an_instruction_is_a_rule_but_a_report_or_what_was_seen_is_not():
    assert found("Refactor the decoder. No unsafe blocks.") == ["No unsafe blocks"]
    assert found("Refactor the decoder. No unsafe blocks. No new crates.") == ["No unsafe blocks", "No new crates"]
    assert found("Refactor the decoder. Rust 2021. no macros.") == ["no macros"]  # past a fragment
    assert found("No unsafe blocks.") == []  # alone it may answer a question
    assert found("Rebuilt it. No warnings.") == []
    assert found("Done. 0 failures, 3 skipped, no flaky retries.") == []  # a tally
    assert found("Open the billing page. No export button.") == []  # what the user saw there


def test_a_purpose_clause_of_an_instruction_says_what_the_result_must_not_do():
    assert found("Refactor the importer so that it doesn't write to the shared bucket.") == [
        "that it doesn't write to the shared bucket"]
    assert found("Update the lockfile, so we don't pull a breaking minor.") == ["we don't pull a breaking minor"]
    assert found("The importer batches rows so that it doesn't write to the bucket twice.") == []  # a description
    assert found("Can you batch it so it doesn't time out?") == []  # a question
    assert found("Add a cache so we don't need to refetch.") == []  # no necessity, no rule
    assert found("Add a guard so we don't break anything.") == []  # a generic purpose, no rule
    p = M.prohibitions("Refactor the importer so that it doesn't write to the shared bucket.")[0]
    assert M.judge("The importer must not write to the shared bucket.", p) == "carried"
    assert M.judge("Importer refactored; it now writes to the shared bucket.", p) == "dropped"


def test_refusal_idioms_and_importance_frames_are_rules_and_their_descriptions_are_not():
    assert found("Kindly refrain from renaming the fixtures.") == ["refrain from renaming the fixtures"]
    assert found("Stay away from the payments module.") == ["Stay away from the payments module"]
    assert found("Keep out of the generated folder.") == ["Keep out of the generated folder"]
    assert found("Treat the proto files as read-only.") == ["Treat the proto files as read-only"]
    assert found("Make no changes to the seed script.") == ["Make no changes to the seed script"]
    assert found("It's crucial not to log the tokens.") == ["It's crucial not to log the tokens"]
    assert found("Don't you dare squash my commits.") == ["Don't you dare squash my commits"]
    assert found("I don't want the fixtures touched.") == ["I don't want the fixtures touched"]
    assert found("At no point should you run the reset script.") == ["At no point should you run the reset script"]
    assert found("At no point did the reset script run.") == []
    assert found("The old team stays away from the payments module.") == []
    assert found("The proto files are treated as read-only by the build.") == []
    assert found("It's important not to forget the changelog.") == []
    assert found("Should I refrain from renaming the fixtures?") == []
    assert found("No changes to the seed script were needed.") == []


def test_a_spanish_or_french_negative_imperative_is_read_as_its_english_frame():
    assert found("no borres los tests por favor") == ["no borres los tests por favor"]
    assert found("Refactor the driver. pas de unwrap in the driver.") == ["pas de unwrap in the driver"]
    assert found("ne touche pas au Makefile") == ["ne touche pas au Makefile"]
    assert found("There are no uses of the helper left.") == []  # English "no uses"


def test_doing_it_myself_keys_on_the_action_kept_and_a_short_acronym_carries_a_verbless_rule():
    p = make_prohibition("I'll review the diff and tag the release myself.", form="restraint")
    assert M.judge("Release left untagged for the user.", p) == "carried"
    assert M.judge("Tagged v1.2.0 and pushed the tag.", p) == "dropped"
    q = make_prohibition("no AVX512 code path")
    assert M.judge("Out of scope: AVX512.", q) == "carried"
    assert M.judge("Added the AVX512 code path.", q) == "dropped"


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


# --------------------------------------------------------------------------- held-out sets 6 and 7, then development


def test_a_nah_or_nope_before_a_prohibition_is_a_decline_marker_and_alone_it_forbids_nothing():
    assert found("nah don't commit it, the plans folder is ignored on purpose") == ["don't commit it"]
    assert found("nope, never squash the history") == ["never squash the history"]
    assert found("nah, that's fine") == []
    assert found("nope, it works now") == []


def test_a_request_tacked_on_as_a_question_does_not_make_the_rule_before_it_a_question():
    assert forms("let's leave that for a follow-up, can you open an issue for it?") == [
        ("defer", "let's leave that for a follow-up")]
    assert found("don't merge it yet, could you ping the reviewer?") == ["don't merge it yet"]
    assert found("can you leave that for a follow-up?") == []  # the question itself asks


def test_keeping_a_named_thing_working_is_a_preserve_rule_and_keep_going_is_not():
    assert forms("ooh nice. keep j/k working though, some of us live in vim") == [
        ("preserve", "keep j/k working though, some of us live in vim")]
    assert forms("keep the CLI working on windows") == [("preserve", "keep the CLI working on windows")]
    for text in ("keep going", "keep working on it", "keep working", "keep it short", "keep me posted",
                 "keep at it", "keep it up", "keep each commit with working code please",
                 "keep poking until it's working"):
        assert found(text) == [], text


def test_a_thing_that_has_to_keep_working_is_a_preserve_rule_but_should_still_work_is_a_hope():
    assert forms("- the old flat keys have to keep working for reading, new writes use the nested form") == [
        ("preserve", "the old flat keys have to keep working for reading, new writes use the nested form")]
    assert forms("the parser has to keep working with old files") == [
        ("preserve", "the parser has to keep working with old files")]
    assert found("the tests should still work") == []


def test_rather_staying_on_a_tool_is_a_preserve_rule_but_rather_you_ask_is_not():
    assert forms("also i'd rather stay on pandas, i know polars is faster") == [
        ("preserve", "i'd rather stay on pandas")
    ]
    assert forms("I'd rather stick with argparse") == [("preserve", "I'd rather stick with argparse")]
    assert found("I'd rather you ask") == []
    assert found("i'd rather stay out of this") == []
    assert found("we stay with settings.json") == []  # a decision reported, not a thing at risk


def test_a_contrast_whose_other_side_is_a_path_is_read():
    assert forms("run only the integration_test package, not ./... , the whole thing takes 12 min here") == [
        ("contrastive", "run only the integration_test package, not ./")]
    assert forms("use the local copy, not ../shared") == [("contrastive", "use the local copy, not ../shared")]
    assert found("run it, not sure it works") == []


def test_a_rule_on_it_right_after_a_rule_on_a_thing_is_one_rule_about_that_thing():
    assert forms("keep the -race flag in the test task, dont drop it even if it doubles the time") == [
        ("preserve", "keep the -race flag in the test task, dont drop it even if it doubles the time")]
    assert found("the build is flaky, don't touch it") == ["don't touch it"]  # a description first: nothing to join
    summary = "- `-race` stays in the `test:integration` task (the user insisted)."
    rule = M.prohibitions("keep the -race flag in the test:integration task, dont drop it even if it doubles the time")[
        0
    ]
    assert M.judge(summary, rule) == "carried"


def test_short_forms_developers_type_match_the_words_a_summary_writes_in_full():
    assert M.judge("No new crypto dependencies.", make_prohibition("no new crypto deps")) == "carried"
    assert (
        M.judge("Do not touch the repository settings.", make_prohibition("dont touch the repo settings")) == "carried"
    )
    assert M.judge("No new tests.", make_prohibition("no new crypto deps")) == "dropped"
    assert content_words("deps repo config env docs") == content_words("dependencies repository configuration "
                                                                      "environment documentation")


def test_a_one_word_rule_is_carried_only_by_a_negation_about_that_word():
    rule = make_prohibition("keep j/k working though", form="preserve")
    assert M.judge("- enabled the built-in filtering in the picker (no new dependencies), height 15, j/k test;",
                   rule) == "dropped"
    assert M.judge("User asked to keep j/k working (vim users).", rule) == "carried"
    assert M.judge("- Not touching j/k: vim users rely on it.", rule) == "carried"
    # a negation that opens the sentence governs all of it
    assert (
        M.judge("Out of scope (per the plan): NEON, multithreading.", make_prohibition("Out of scope: Multithreading"))
        == "carried"
    )


def test_a_contrast_is_uncertain_only_where_its_directive_verb_is_said():
    rule = make_prohibition("run only the integration_test package, not ./", form="contrastive")
    assert (
        M.judge("- Checked the other integration tests: only one is parallel and it does not set env.", rule)
        == "dropped"
    )
    assert M.judge("- Runs only the integration_test package (not ./...).", rule) == "carried"


def test_what_a_named_part_of_the_program_should_not_do_is_a_rule_but_a_prediction_is_not():
    assert found("one more thing: the doctor command should not auto-fix anything unless --fix is passed") == [
        "the doctor command should not auto-fix anything unless --fix is passed"]
    assert found("the test should not fail") == []
    assert found("it should not take long") == []
    assert found("this should not happen") == []


def test_an_answer_that_names_no_thing_is_matched_by_the_action_the_question_proposed():
    question = "When access is revoked, should we rotate the folder key and re-encrypt?"
    [rule] = M.prohibitions("not in this phase. put it under deferred, we lack the worker", about=question)
    assert (rule.form, rule.text, rule.about) == ("defer", "not in this phase", question)
    assert rule.id == make_prohibition("not in this phase").id and "about" not in rule.as_wire()
    assert M.judge("- Deferred (per user): key rotation/re-encryption on revoke", rule) == "carried"
    assert (
        M.judge("- No service worker caching in this phase (phase 11).", rule) == "dropped"
    )  # "phase" alone says nothing
    # an answer with a thing of its own, or a question that proposes no action, keeps the answer's words
    assert M.prohibitions("no, leave the docs alone", about="Should I also update the docs?")[0].about == ""
    assert M.prohibitions("not in this phase", about="What may the server learn?")[0].about == ""


def test_an_instructions_purpose_that_forbids_a_result_preserve_verbs_and_run_it_by_me_first():
    from stream.adapters.compaction.prohibitions import ProhibitionMatcher

    m = ProhibitionMatcher()
    (p,) = m.prohibitions("add a lock around the writer to prevent two workers from writing the same file")
    assert (p.form, p.cue) == ("explicit", "purpose-prevent")
    assert m.prohibitions("add a test to avoid regressions") == []  # a generic purpose
    assert m.prohibitions("I added a lock to prevent races") == []  # a report
    (p,) = m.prohibitions("maintain backward compatibility with the v1 API")
    assert p.form == "preserve"
    (p,) = m.prohibitions("run it by me first before touching the public API")
    assert p.form == "restraint"


def test_a_bold_lead_in_that_marks_a_list_read_only_is_a_keep_rule_of_a_plan():
    from stream.adapters.compaction.prohibitions import ProhibitionMatcher

    plan = ("# Plan\n\n## Critical Files\n\n**Files to create:**\n- `docs/a.md` - the new guide\n\n"
            "**Reference files (read-only):**\n- `src/a.py` - where the content comes from\n")
    assert [(p.form, p.cue) for p in ProhibitionMatcher().prohibitions(plan, source="plan")] == [
        ("preserve", "paren-unchanged")]


def test_a_directive_clause_after_an_opinion_that_rejects_an_alternative_with_rather_than_is_contrastive():
    from stream.adapters.compaction.prohibitions import ProhibitionMatcher

    m = ProhibitionMatcher()
    text = ('I think the notes belong under "archive", so update the guide to say that, rather than adopting '
            'the template\'s folder "notes/old/"')
    assert [(p.form, p.cue) for p in m.prohibitions(text)] == [("contrastive", "contrast")]
    assert m.prohibitions("I think we could use pathlib, rather than os.path") == []  # a suggestion
    plan = "# Plan\n\n## Steps\n1. Update the caller to pass `root` instead of `project_dir`\n"
    assert m.prohibitions(plan, source="plan") == []  # an edit, not a rule


def test_a_one_word_rule_is_carried_by_a_negation_that_governs_it_not_by_one_four_words_away():
    from stream.adapters.compaction.prohibitions import ProhibitionMatcher, make_prohibition

    m = ProhibitionMatcher()
    rule = make_prohibition("no new test", source="user", form="explicit", cue="no-x-forceful")
    assert m.judge_cue("Committed as-is, without a new test.", rule)[0] == "carried"
    assert m.judge_cue("We decided against a new test for it.", rule)[0] == "carried"
    assert m.judge_cue("Ran the smoke test: `wakil ingest transcript` without `--yes` aborted.", rule)[0] == "dropped"
    assert m.judge_cue("Ran a manual smoke test against a workspace.", rule)[0] == "dropped"  # a preposition


def test_a_plans_decision_that_an_action_is_not_recommended_is_read_in_a_plan_only():
    from stream.adapters.compaction.prohibitions import ProhibitionMatcher

    m = ProhibitionMatcher()
    plan = "# Plan\n\n## Steps\n1. Add the export.\n2. Caching the results is not recommended.\n"
    assert [p.cue for p in m.prohibitions(plan, source="plan")] == ["plan-not-recommended"]
    assert m.prohibitions("caching is not recommended by the vendor") == []  # a typed remark


def test_a_plans_design_contrast_and_not_ved_state_are_low_strength_cues():
    """A plan's "X once per change, not per read" describes its design; "(not executed)" a state: both low."""
    m = ProhibitionMatcher()
    plan = ("# Plan\n\n## Steps\n\n1. Cache the index (not inside the request handler)\n"
            "2. The query is returned as text (not executed)\n3. Compute the hash once per file change, not per read\n")
    assert [p.cue for p in m.prohibitions(plan, source="plan")] == [
        "plan-paren-not", "plan-paren-not-state", "plan-contrast"]
    assert [p.cue for p in m.prohibitions("Compute the hash once per file change, not per read")] == ["contrast"]
    from stream.adapters.compaction import cues
    assert [cues.strength_of(c) for c in ("plan-paren-not", "plan-paren-not-state", "plan-contrast", "contrast")] == [
        "medium", "low", "low", "medium"]


def test_a_plans_non_goals_parenthetical_is_a_list_of_exclusions_even_in_a_describing_section():
    m = ProhibitionMatcher()
    plan = ("# Plan\n\n## Intent\n\n- Clear problem statement: the tool is slow\n"
            "- Sensible goals (speed, memory) and non-goals (no GPU backend, no config migration)\n")
    assert [(p.cue, p.text) for p in m.prohibitions(plan, source="plan")] == [
        ("plan-non-goals", "no GPU backend"), ("plan-non-goals", "no config migration")]
    assert [p.cue for p in m.prohibitions("## Design\n\n- Out of scope (no Windows support)\n", source="plan")] == [
        "plan-non-goals"]


def test_a_plans_not_recommended_decision_is_read_in_a_describing_section_too():
    m = ProhibitionMatcher()
    plan = ("# Plan\n\n## Critical Files\n\n**Files to modify:**\n"
            "- None (the README update is optional and not recommended at this time)\n")
    assert [p.cue for p in m.prohibitions(plan, source="plan")] == ["plan-not-recommended"]
    assert [p.cue for p in m.prohibitions("The README update is not recommended at this time.")] == []


def test_a_plans_recommend_cutting_heading_is_a_decision_against_the_thing_it_names():
    m = ProhibitionMatcher()
    plan = ("# Review: dark mode\n\n## Overengineering Analysis\n\n"
            "### Recommend cutting: `Theme.autoSwitch` scheduling\n"
            "- **What**: New timer in `ThemeContext`\n- **Why cut**: Rarely used.\n\n"
            "### Recommend simplifying: the picker\n- Use the toggle.\n")
    assert [(p.cue, p.text) for p in m.prohibitions(plan, source="plan")] == [
        ("plan-cut-heading", "Recommend cutting: `Theme.autoSwitch` scheduling")]
    assert [p.cue for p in m.prohibitions(plan.replace("Recommend cutting", "Consider cutting"), source="plan")] == []
