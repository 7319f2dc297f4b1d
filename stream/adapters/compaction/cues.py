"""The cue tables of the ``rules`` judge: every decision it makes names one row here.

A :class:`Cue` is data: its name, language, the decision it serves (``instruction``: a
text states a standing prohibition; ``carry``: a summary still states it; ``drop``: why a
summary is taken not to; ``veto``: what is never a prohibition), the form class, the
pattern or lexical form, and a *strength* (``high`` / ``medium`` / ``low``) that the
precision setting (:data:`PRECISION_LEVELS`) admits or not. ``bench/eval_real_logs.py``
reports precision per cue, so a bad one can be seen and removed.

English instruction cues are the extractor of :mod:`stream.adapters.compaction.prohibitions` (its
regexes, named); other languages have tables of their own here (:data:`FOREIGN`), read
sentence by sentence; a text in a language no table reads is counted and reported
(:func:`language_of`). Structural carry / drop cues (``quoted``, ``unquoted-again``) need no
language.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache

STRENGTHS = ("high", "medium", "low")


@dataclass(frozen=True)
class Cue:
    name: str
    lang: str  # ISO 639-1, or "*" for a structural cue
    decision: str  # instruction | carry | drop | veto
    form: str | None  # explicit | preserve | contrastive | defer | restraint | implicit (instruction cues)
    pattern: str  # the regex, or a short statement of the structural test
    strength: str = "medium"
    note: str = ""
    scope: str = "any"  # instruction cues: "any" line, or "item" (a list item or a plan's line only)


def _en(name: str, form: str, strength: str, pattern: str, note: str) -> Cue:
    return Cue(name, "en", "instruction", form, pattern, strength, note)


def _english_rows() -> tuple[Cue, ...]:
    from stream.adapters.compaction import prohibitions as p

    return (
        _en(
            "neg-imperative",
            "explicit",
            "high",
            p._NEG_IMPERATIVE.pattern,
            "don't / never / let's not / avoid / stop + verb",
        ),
        _en("addressee-not", "explicit", "high", p._ADDRESSEE_NOT.pattern, "the assistant / Claude must not V"),
        _en("important-not", "explicit", "high", p._IMPORTANT_NOT.pattern, "it's important not to V"),
        _en("modal-negation", "explicit", "medium", p._MODAL_NEGATION.pattern, "<anything> must not / must never V"),
        _en("requirement-not", "explicit", "medium", p._REQUIREMENT.pattern, "it should not be <done>"),
        _en("needs-no", "explicit", "medium", p._NEEDS_NO.pattern, "it needs no X"),
        _en("polite-not", "explicit", "high", p._POLITE_NOT.pattern, "please not V (non-native)"),
        _en("nothing-should", "explicit", "medium", p._NOTHING_SHOULD.pattern, "nothing in X should be V-ed"),
        _en("should-not-act", "explicit", "medium", p._SHOULD_NOT_ACT.pattern, "the <part> should not <action verb>"),
        _en("rejection-use", "contrastive", "medium",
            "(structural) a tool rejection's words naming what to use: 'use X', 'use Y instead', '用 X', 'usa X'",
            "the user stopped the tool call and named the alternative: not what the agent tried"),
        _en("answer-excludes", "explicit", "medium",
            "(structural) the answer to 'Which features stay out of the first release?' / 'What is out of scope?'",
            "an AskUserQuestion answer naming what is left out, deferred or not to be done"),
        _en("should-never", "explicit", "medium", p._SHOULD_NEVER.pattern, "<anything> should never V"),
        _en("forbidden", "explicit", "high", p._FORBIDDEN.pattern, "V-ing X is forbidden / X is off-limits"),
        _en("fronted-please-not", "explicit", "medium", p._FRONTED_PLEASE_NOT.pattern, "X please not V"),
        _en("out-of-scope-lead", "explicit", "high", r"^(?:out of scope|non-goals?):", "Out of scope: X"),
        _en("purpose-prevent", "explicit", "medium", r"^<imperative> ... to prevent / avoid X",
            "an instruction whose purpose forbids a result: 'add a lock to prevent two workers from writing'"),
        _en(
            "negated-list-item",
            "explicit",
            "high",
            p._NEGATED_LEAD.pattern,
            "an item of a Don't / Won't do / Non-goals list",
        ),
        # low: asked, not stated ("can we not filter in X?" may ask whether it can be avoided); 0 TP / 1 FP on six folds
        _en("neg-request", "explicit", "low", p._NEG_REQUEST.pattern, "can we not X? / is it ok if you don't X?"),
        _en("purpose-not", "explicit", "medium", p._PURPOSE_NOT.pattern, "do X so that it doesn't V"),
        _en("all-but", "explicit", "medium", r"^(?:V )?(?:everything|all) (?:but|except) X$",
            "an exclusion answering 'which ones?': not X"),
        _en("dont-want-to", "explicit", "medium", r"^(?:i|we) don't want (to) V", "the user's wish against an action"),
        _en("dont-want-thing", "explicit", "medium", r"^(?:i|we) don't want / need X",
            "the user's wish against a thing (not the reply: 'I don't want a long answer')"),
        _en("only-imperative", "explicit", "medium", r"^only (use|change|ask|run|...) X",
            "a limit on an action said as an order: 'only use the staging data'"),
        _en(
            "plan-descriptive-imperative",
            "explicit",
            "medium",
            p._NEG_IMPERATIVE.pattern,
            "an explicit imperative in a plan section that describes",
        ),
        _en(
            "no-x-decisions",
            "explicit",
            "medium",
            p._NO_NP.pattern,
            "a 'no X' item of a list of decisions / constraints",
        ),
        _en("no-x-instruction-list", "explicit", "low", p._NO_NP.pattern, "a 'no X' item of a list of instructions"),
        _en("no-x-paired", "explicit", "medium", p._NO_PAIR.pattern,
            "a plan step or instruction item that is only refusals: 'No X, no Y'"),
        _en("no-x-parenthetical", "explicit", "medium", p._NO_NP.pattern, "(no X) on an instruction or a decision"),
        _en("no-x-forceful", "explicit", "medium", p._NO_NP_DIRECTIVE.pattern, "no new X / no X in this PR / pls no X"),
        _en("no-x-then-instead", "explicit", "low", p._NO_NP.pattern, "no X, do Y instead"),
        _en("no-x-beside-instruction", "explicit", "medium", p._NO_NP.pattern, "a short 'no X' beside an instruction"),
        _en(
            "keep-existing",
            "preserve",
            "medium",
            p._PRESERVE.pattern,
            "keep it local / keep the existing X / keep X working",
        ),
        _en("must-stay", "preserve", "medium", p._MUST_STAY.pattern, "X must stay the same / keep working"),
        _en(
            "preserve-verb", "preserve", "medium", p._PRESERVE_VERB.pattern, "maintain / stick with / leave X unchanged"
        ),
        _en("defer-marker", "defer", "medium", p._DEFER.pattern, "defer X / leave X for later / not in this PR"),
        _en("restraint", "restraint", "medium", p._RESTRAINT.pattern, "I'll do that myself / ask before / wait for me"),
        _en("consult-first", "restraint", "medium", p._CONSULT.pattern, "ask me before changes / let me review first"),
        _en("look-first", "restraint", "medium", p._LOOK_FIRST.pattern,
            "read / plan / present X before you change / build / code"),
        _en("contrast", "contrastive", "medium", p._CONTRAST.pattern, "a directive '..., not Y' / 'use X not Y'"),
        _en("contrast-requirement", "contrastive", "medium", p._SHOULD_HOST.pattern,
            "a requirement on a named thing with ', not Y': 'X should be stored in Y, not in Z'"),
        _en("paren-not", "contrastive", "medium", p._PAREN_NOT.pattern, "an instruction with '(not Y)'"),
        _en("avoid-modal", "explicit", "high", r"^(?:you|we) (?:should|must|need to) avoid V", "we should avoid X"),
        _en(
            "important-that-not",
            "explicit",
            "medium",
            r"^it's important that <it> doesn't V",
            "it's important that it doesn't V",
        ),
        _en(
            "requirement-not-adjective",
            "explicit",
            "medium",
            r"<it> should not be <V-able>",
            "X should NOT be freely editable",
        ),
        _en(
            "plan-context-requirement",
            "explicit",
            "medium",
            p._NO_CHANGES_TO.pattern,
            "a requirement (should not be V-ed / No changes to X) in a plan's context section",
        ),
        _en("plan-no-x", "explicit", "medium", p._NO_NP.pattern, "a plan's sentence or item that is only 'No X'"),
        _en("plan-not-recommended", "explicit", "medium", p._NOT_RECOMMENDED.pattern,
            "a plan's decision against an action: 'X is not recommended at this time'"),
        _en("plan-paren-not", "contrastive", "medium", p._PAREN_NOT.pattern, "a plan item with '(not Y)'"),
        _en("plan-scope-cut", "explicit", "medium", p._SCOPE_CUT.pattern,
            "a plan's scope cut: 'Drop X altogether', 'Cut X for the MVP' (defer)"),
        _en("plan-existing-unaffected", "preserve", "medium", p._EXISTING_UNAFFECTED.pattern,
            "a plan line 'Existing X unaffected / unchanged'"),
        _en("plan-paren-not-state", "contrastive", "low", p._PAREN_NOT_STATE.pattern,
            "a plan item with '(not V-ed)' alone: a state it describes"),
        _en("plan-non-goals", "explicit", "medium", p._NON_GOAL.pattern,
            "a plan's '(no X, no Y)' after 'non-goals' / 'out of scope': its scope exclusions"),
        _en("plan-cut-heading", "explicit", "medium", p._CUT_HEADING.pattern,
            "a plan's heading 'Recommend cutting: X': a decision against X"),
        _en("plan-contrast", "contrastive", "low", p._CONTRAST.pattern, "a plan line '..., not Y': its design"),
        _en("paren-unchanged", "preserve", "medium", p._PAREN_KEEP.pattern, "X (unchanged) / ### X (no changes)"),
        _en(
            "decline",
            "implicit",
            "medium",
            p._IMPLICIT.pattern,
            "a decline of the agent's proposal ('no, ignore this part')",
        ),
        _en("dislike-rule", "explicit", "low", p._DISLIKE.pattern, "i don't like it when you V"),
        Cue("hedged", "en", "veto", None, p._HEDGED.pattern, note="maybe ... or we shouldn't ...: an idea floated"),
        Cue("opinion", "en", "veto", None, p._OPINION.pattern, note="I think / I don't think / maybe"),
        Cue("possibility", "en", "veto", None, p._POSSIBILITY.pattern, note="may not / no need to / don't have to"),
        Cue("complaint", "en", "veto", None, p._COMPLAINT.pattern,
            note="what the work wasted of the user's time, money or credits: a complaint"),
    )


# --------------------------------------------------------------------------- other languages

#: Chinese verbs of an act on the work (what "不用 V" refuses): refer to, change, generate, create, add, delete, ...
_ZH_ACT = (r"(?:参考|參考|参照|參照|修改|改动|改動|改|生成|创建|創建|新建|添加|增加|加|删除|刪除|删|刪|"
           r"写|寫|做|跑|运行|運行|提交|推送|安装|安裝|动|動|碰|用|使用|调用|調用|引入|重写|重寫|"
           r"重构|重構|测试|測試|部署|发布|發布)")
#: Per language: instruction cues (name, form, strength, pattern) tried in order on each sentence, and vetoes.
_FOREIGN_SPEC: dict[str, dict[str, list[tuple[str, ...]]]] = {
    "ja": {
        "instruction": [
            (
                "neg-request",
                "explicit",
                "high",
                r"ないで(?:ください|下さい|くれ|ね|よ|ほしい|欲しい|もらえ|いただけ|頂け|おいて)|ないで(?=[。．！!\s]|$)",
            ),
            (
                "must-not",
                "explicit",
                "high",
                r"(?:ては|ちゃ|じゃ|では)(?:いけない|いけません|だめ|ダメ|駄目|ならない|なりません)",
            ),
            # "X しないこと", "X を使わないようにして" (any verb's negative, not only する's)
            ("not-to-do", "explicit", "high", r"しないこと|ないように(?:して|お願い|ください|下さい|しましょう)"),
            # "X はやめてください" / "X するのはやめよう": stop doing X (not "やめてしまった", a report)
            ("stop-it", "explicit", "high",
             r"(?:のは|は|を|も)(?:やめ|止め)(?:て(?!しま|い[たる]|から|お[りい])(?:ください|下さい|ほしい|欲しい|くれ|ね|よ)?"
             r"|ましょう|よう)"),
            # a request cut short at "so that it does not": "毎回尋ねないように。"
            ("not-to-do-elliptic", "explicit", "medium",
             r"(?<!でき)(?<!いけ)(?<!なら)(?<!から)ないように\s*[。．.!！]?\s*$"),
            ("forbidden", "explicit", "medium", r"禁止|厳禁"),
            # a dislike stated as a rule, the desiderative negated: "X は増やしたくない", "まだリリースしたくはない"
            # (not a past "したくなかった", not one hedged or conceded: "したくないけど", "したくないかも")
            ("dont-want", "explicit", "medium",
             r"(?:[しさせえけげてべめれねびみきぎちりいわ]|使い|触り|変え|入れ)たく(?:は|も)?(?:ない|ありません)"
             r"(?!けど|けれど|が|かも|と思い?ま?す?が|んだけど)"),
            (
                "keep-as-is",
                "preserve",
                "medium",
                r"(?:その|この)?ままに?して(?:ください|下さい|おいて)?|そのままで(?:いい|お願い|残)|を?維持して|を?残して(?:ください|下さい|おいて)|変更しないで"
                r"|のままで?(?:いこう|行こう|いきましょう|行きましょう|お願い)|現状(?:の)?まま|現状維持",
            ),
            (
                "later",
                "defer",
                "medium",
                r"(?:後で|あとで|後回しに|次回|今度)(?:に)?(?:して|しましょう|します|でいい|やる)",
            ),
            (
                "ask-first",
                "restraint",
                "medium",
                r"(?:前に|まず|先に)(?:確認|相談)して|確認してから|私が(?:やる|やります|します)"
                r"|(?:承認|確認|許可)を(?:待って|得てから|取ってから)",
            ),
            ("skip-for-now", "defer", "medium", r"(?:今は|いったん|一旦|とりあえず)(?:スキップ|保留|後回し|やらない)"),
            # "X は不要。", "X の追加も不要です。": a sentence that closes on 不要 refuses X
            # (the "no need" veto lets it through)
            ("not-needed", "explicit", "low", r"\S(?:は|も)[^\s。、]{0,8}?不要(?:です)?\s*[。．.!！]?\s*$"),
            (
                "neg-item",
                "explicit",
                "medium",
                r"(?:変更|修正|追加|削除|導入|使用|編集|作成|実装|公開|コミット|プッシュ|マージ|リネーム|リファクタ\w*)(?:は|を)?(?:し|せ)(?:ない|ず|ません)(?:こと|ように)?\s*[。.]?\s*$"
                r"|(?:触ら|使わ|変え|消さ|入れ|書か|いじら|壊さ|増やさ|足さ|加え|動かさ|戻さ|作ら|残さ|呼ば)(?:ない|ず|ません)(?:こと|ように)?\s*[。.]?\s*$"
                r"|(?:は|の)?(?:なし|無し)\s*[。.)）]?\s*$|禁止\s*[。.]?\s*$",
                "item",
            ),
            # the -zu (without doing) form of an action verb inside a plan line: "`f()` は呼ばず `g()` で計算"
            (
                "zu-clause",
                "explicit",
                "medium",
                r"(?:(?:変更|修正|追加|削除|導入|使用|編集|作成|実装|公開|コミット|プッシュ|マージ)(?:は|を)?せず"
                r"|(?:触ら|使わ|変え|消さ|書か|いじら|壊さ|増やさ|動かさ|呼ば|作ら)ず)(?=[\s、，,。）)]|$)",
                "item",
            ),
            # a plan line's plain (dictionary) form of a keep verb: "`X` 属性はそのまま残す", "既存の API を維持する"
            ("keep-plain", "preserve", "medium",
             r"(?:その|この|現状の)?まま(?:残す|にする|とする|維持する|使う)"
             r"|(?:を|は)(?:維持|保持)する|(?:は|を)変更しない", "item"),
            # "X ではなく Y で / を ...して": not X but Y, in a request
            # (not a description: "原因は X ではなく Y だった")
            # low: on the six folds it read one rule the summary restated in English (0 right / 1 wrong at precise)
            ("rather-than", "contrastive", "low",
             r"ではなく[、，,\s]?[^。．]*?(?:して(?:ください|下さい|ほしい|欲しい|ね|よ)?\s*[。．]?\s*$|(?:にして|でお願い|を使って|"
             r"上で|からにして|ように)|(?:ください|下さい|しよう|しましょう))"),
            # a restriction of a plan line / list item: "X の適用は Y に限定する"
            ("limit-to", "contrastive", "medium", r"(?:のみ|だけ)?に(?:限定|限る|限ります|留める|とどめる)", "item"),
            # a scope exclusion closing a plan line / list item: "X は対象外", "X はスコープ外"
            ("out-of-scope", "explicit", "medium",
             r"(?:は|も)?(?:対象外|スコープ外|範囲外)(?:とする|です|にする)?\s*[。.]?\s*$", "item"),
        ],
        "veto": [
            ("question", r"[?？]\s*$|(?:ですか|ますか|でしょうか|かな)\s*[。]?\s*$"),
            ("hedged", r"かも|たぶん|多分|もしかして|かもしれ"),
            ("no-need", r"なくても(?:いい|大丈夫|良い)|なくて(?:いい|良い|大丈夫)|必要(?:は)?ない|必要ありません"
             r"|不要(?!(?:です)?\s*[。．.!！]?\s*$)|^\W*不要"),
        ],
    },
    "zh": {
        "instruction": [
            (
                "neg-imperative",
                "explicit",
                "high",
                r"(?<![需必只重])(?:请|請)?(?:不要|切勿|请勿|請勿|不准|不许|不許|不得|严禁|嚴禁|禁止)"
                r"|(?:^|[，,。；;：:\s])(?:请|請)?(?:别|別)(?![的人处處])",
            ),
            (
                "must-not",
                "explicit",
                "medium",
                r"(?:不能|不可以|不可)(?:再|随便|隨便|擅自|直接)?[改删刪动動加提推用碰写寫换換]",
            ),
            # a dislike stated as a rule: "我不希望创建 X", "我不想要 X" (not conceded / past: "不想…但", "不想…了吗")
            ("dont-want", "explicit", "medium",
             r"我(?:并|並|真的|也|又|还是|還是)?(?:不希望|不想(?:要|让你|讓你|你)?)(?=[\u4e00-\u9fff\w])"
             r"(?![^。；;！!]*(?:但|可是|不过|不過))"),
            # "X 就不应该 V", "不該 V": should not (a rule the user states about the product)
            ("should-not", "explicit", "medium", r"(?:不应该|不應該|不该|不該|不应|不應)(?:再|去)?[\u4e00-\u9fff]"),
            # "保持 / 维持" (maintain) keeps a thing as it is only with "unchanged / current / as it was": alone it is a
            # quality asked for ("保持简洁", "与 X 保持一致"), not a thing at risk
            ("keep-as-is", "preserve", "medium",
             r"(?:保持|维持|維持).{0,8}?(?:不变|不變|不动|不動|原样|原樣|原状|原狀|现状|現狀|现在|現在|当前|當前|原有|原来|"
             r"原來|现有|現有|目前)|(?<![只仅僅])保留|(?:不要|别|別)(?:动|動)|原样|原樣"
             r"|^\W*不(?:动|動)(?=\s*\S)"),
            # "X 不需要改动" / "X 不用改": X needs no change, a keep rule (the "no need" veto lets this one through)
            ("no-change-needed", "preserve", "medium",
             r"(?<=[^\W\d你您我他她它们們])不(?:需要|用|必)(?:再)?(?:修改|改动|改動|更改|变更|變更|改|动|動)"),
            (
                "later",
                "defer",
                "medium",
                r"(?:先|暂时|暫時|暂且)(?:不|别|別|不要)|以后再|之后再|稍后再|下次再|以後再|之後再",
            ),
            (
                "ask-first",
                "restraint",
                "medium",
                r"(?:先|事先)(?:问|問|确认|確認|征求)我|(?:先|事先)(?:给|給|跟|和|让|讓)我(?:确认|確認|看|过目|過目|审|審)|"
                r"(?:之前|以前)(?:先)?(?:问|問|确认|確認)(?:一下)?我|经过我|經過我|等我(?:确认|確認|同意)|我(?:自己|亲自|親自)来"
                # seek my opinion / let me decide: "征求我的意见再决定", "由我来决定是否 X"
                r"|(?:征求|徵求|寻求|尋求|询问|詢問|听取|聽取|问问|問問)(?:一下)?我的?(?:意见|意見|同意|看法)|由我(?:来|來)?(?:决定|決定)",
            ),
            ("skip-for-now", "defer", "medium", r"(?:暂时|暫時|先)(?:跳过|跳過|不做|搁置|擱置|不管)"),
            # a refusal of an act the agent was about to do: a sentence that opens with "不用 <act>"
            # ("不用修改测试用例")
            ("no-need-act", "explicit", "medium", r"^\W*(?:你)?不用(?:再)?" + _ZH_ACT),
            # wait for me: "我确认后再部署", "等我看过再提交", "测试通过以后你再上传" (after X, only then you V)
            ("after-me", "restraint", "medium",
             r"我(?:确认|確認|同意|看过|看過|批准|审核|審核|检查|檢查)(?:完|好)?(?:之后|之後|以后|以後|后|後)?再"
             r"|(?:之后|之後|以后|以後|后|後)你再"),
            ("rather-than", "contrastive", "medium", r"而(?:不是|非)\S"
             # "X 并不是我想要(使用)的, 我要的是 Y": not the one I want
             r"|(?:并不是|並不是|不是|并非|並非)我(?:想要|希望|要|想)(?:使用|用|的那个|的那個)?的"),
            # a limit: "总共不超过十个", "一次只问一个问题", "每次只改一个文件"
            ("limit", "explicit", "medium",
             r"(?:不超过|不超過|不能超过|不能超過|不得超过|不得超過)\s*[0-9一二两兩三四五六七八九十百千几幾]"
             r"|(?:一次|每次)(?:只|仅|僅)(?:能|可以)?[\u4e00-\u9fff]{1,4}?(?:一|1)\s*(?:个|個|条|條|件|项|項|处|處)"
             # "at most N <unit>", the verb between: "最多改 3 个文件", "最大检索 2 小时" (not "最大的", "最多的")
             r"|(?:最多|最大|至多|最长|最長)(?:只)?(?:能|可以)?[\u4e00-\u9fff]{0,3}?\s*[0-9一二两兩三四五六七八九十百千]+\s*"
             r"(?:个|個|条|條|件|项|項|次|行|页|頁|天|周|小时|小時|分钟|分鐘|秒|字|轮|輪|层|層|token)"),
            # a plan line's scope exclusion and restriction: "X 不在本次范围内", "仅限于 X"
            ("out-of-scope", "explicit", "medium", r"(?:不在|超出)(?:本次|这次|此次)?(?:的)?(?:范围|範圍)", "item"),
            ("limit-to", "contrastive", "medium", r"(?:仅|僅|只)(?:限于|限於|用于|用於)", "item"),
            (
                "neg-item",
                "explicit",
                "medium",
                r"^(?:[\w`./-]+\s*)?(?:不|无|無|勿|禁止|避免)(?:再|要|得)?(?:修改|改动|改動|改变|改變|更改|引入|添加|增加|新增|删除|刪除|移除|使用|触碰|觸碰|重写|重寫|"
                r"重构|重構|提交|推送|合并|合併|依赖|依賴|展示|显示|顯示|出现|出現|默认|默認|强调|強調|在|动|動|碰|改|加|删|刪)",
                "item",
            ),
        ],
        "veto": [
            # "是否" asks, unless it is what someone decides: "由我决定是否 X" is no question
            ("question", r"[吗嗎呢？?]\s*$|(?<!决定)(?<!決定)(?<!决策)(?<!判断)(?<!判斷)"
             r"(?<!评估)(?<!評估)(?<!确认)(?<!確認)是否"
             r"|要不要|能不能|可不可以"),
            ("hedged", r"也许|也許|或许|或許|可能|大概|是不是"),
            # non-necessity, not "先不用 V" (not yet: a deferral) nor a sentence that opens with "不用 <act>" (a refusal
            # of the act: "不用改这个文件"; "不用担心" is reassurance)
            # (not "X 不需要改动", a keep rule on the thing X names: no-change-needed)
            ("no-need", r"(?<!先)(?<!暂时)(?<!暫時)(?<!暂且)(?:不需要|不必)"
             r"(?!再?(?:修改|改动|改動|更改|变更|變更|改|动|動))"
             r"|(?<![^\W\d你您我他她它们們])(?:不需要|不必)"
             r"|无需|無需|(?<!先)(?<!暂时)(?<!暫時)(?<!暂且)不用(?!再?" + _ZH_ACT + r")"
             r"|^\W*不用(?=再?" + _ZH_ACT + r")(?=.*(?:担心|擔心|着急|著急|客气|客氣|谢|謝))"),
        ],
    },
    "ko": {
        "instruction": [
            # "V지 마(요/세요)", "V진 말어" (하지는 말아, spoken): not a noun after a 지 / 진
            # ("페이지 마지막", "사진 마음에")
            ("neg-imperative", "explicit", "high",
             r"(?:지|진|지는)\s*(?:마(?!지막|음|치|무리|련|켓|당|을|저|찬가지|크|우스|감|케팅|스터|이그|일)"
             r"|말아|말어|말고|말라|말\s*것|맙시다)"),
            # not "V어 주면 안 돼?": a request (can you V for me?)
            ("must-not", "explicit", "high", r"(?<!주)(?:면|으면)\s*안\s*(?:돼|됩니다|된다|되요|돼요|됨)"),
            ("stop-it", "explicit", "high",
             r"(?:은|는|을|를)?\s*그만\s*(?:해|하세요|해\s*주세요|하자|합시다|둬|두세요)"),
            ("forbidden", "explicit", "medium", r"금지"),
            (
                "keep-as-is",
                "preserve",
                "medium",
                r"유지(?:해|하세요|해\s*주세요|할\s*것|합니다)|그대로\s*(?:둬|두세요|두고|놔|유지)",
            ),
            ("later", "defer", "medium", r"(?:나중에|다음에)\s*(?:하자|할게|해|하세요|합시다"
             r"|(?:적용|추가|구현|진행|처리|작업|지원|연동)(?:하자|할게|해|하세요|합시다|함|하기)?\s*(?:[(（.。]|$))"),
            ("ask-first", "restraint", "medium", r"먼저\s*(?:물어|확인|상의)|(?:제가|내가)\s*(?:직접|할게|하겠)"),
            # "X 말고 Y(으)로": not X but Y, on a noun (the verb's "V지 말고" is neg-imperative)
            ("rather-than", "contrastive", "medium",
             r"(?<![지\s])\s?말고\s+\S+(?:으로|로|를|을|가|이)?(?=[\s.]|$)|(?<=[가-힣A-Za-z0-9])\s+말고\s+\S"),
            (
                "neg-item",
                "explicit",
                "medium",
                r"(?:하|건드리|바꾸|변경하|수정하|추가하|삭제하|사용하|도입하|만들|커밋하|푸시하|고치|쓰)지\s*(?:않(?:음|기|는다|습니다|도록)|말\s*것|말기)"
                r"|(?:변경|수정|추가|삭제|사용|도입)\s*(?:금지|없음|안\s*함)\s*[.]?\s*$",
                "item",
            ),
            # a plan line's scope exclusion and plain-form keep: "X는 범위 밖", "X 제외", "기존 API는 유지한다"
            ("out-of-scope", "explicit", "medium",
             r"(?:범위\s*(?:밖|외)|대상\s*(?:밖|외)|(?:에서|은|는)?\s*제외)(?:한다|함|합니다)?\s*[.]?\s*$", "item"),
            ("keep-plain", "preserve", "medium", r"(?:유지한다|유지함|그대로\s*(?:둔다|둠|유지))\s*[.]?\s*$", "item"),
        ],
        "veto": [
            ("question", r"[?？]\s*$|(?:까|나요|니|냐)\s*$"),
            ("hedged", r"아마|혹시|것\s*같"),
            ("no-need", r"필요\s*없|안\s*해도\s*(?:돼|됩니다|괜찮)"),
            # "현재 캐시는 동작하지 않는다": a state, not a rule
            ("description", r"^\W*(?:현재|아직|이미|기존에는|원래)\s"),
        ],
    },
    "es": {
        "instruction": [
            (
                "neg-imperative",
                "explicit",
                "high",
                r"\bno\s+(?:(?:lo|la|los|las|le|les|me|te|se|nos)\s+)?(?:toques|cambies|modifiques|borres|elimines|agregues|añadas|"
                r"uses|subas|hagas|pongas|ejecutes|instales|muevas|rompas|edites|renombres|publiques|despliegues|actualices|"
                r"escribas|reescribas|quites|toque|cambie|modifique|borre|elimine|agregue|añada|suba|haga|ponga|ejecute|instale|"
                r"mueva|rompa|edite|renombre|publique|despliegue|actualice|escriba|quite|hagamos|usemos|cambiemos|toquemos)\b",
            ),
            ("never", "explicit", "high", r"\bnunca\s+(?:(?:lo|la|los|las|le|les|me|te|se)\s+)?\w+(?:es|as|e|a)\b"),
            ("avoid", "explicit", "high", r"^(?:por\s+favor,?\s*)?evit(?:a|e|ar)\s+\w|\bprohibido\b"),
            ("must-not", "explicit", "high", r"\bno\s+(?:debes|deberías|debe|deben|quiero\s+que)\b"),
            # "sin tocar X", "sin añadir dependencias" opening the sentence: the rule in a preposition + infinitive
            ("sin-infinitive", "explicit", "medium", r"^\W*(?:y\s+)?sin\s+\w+(?:ar|er|ir)\b"
             # a short answer that excludes a thing: "sí, sin X" (one to three words)
             r"|^\W*(?:(?:sí|si|ok|vale|bien)\s*,\s*)?sin\s+[\w\"'`.@/-]+(?:\s+[\w\"'`.@/-]+){0,2}\s*[.!]?\s*$"),
            ("look-first", "restraint", "medium",
             r"^\W*antes\s+de\s+(?:continuar|seguir|implementar|empezar|comenzar|iniciar|cambiar|modificar|ejecutar)\b"
             r"|\b(?:responde|explica|dime)\b[^.]{0,60}?\by\s+espera\b"),
            # "solo A, no borrarlos", "solo A, no B": a contrast in a rule, the negated infinitive after the comma
            ("rather-than", "contrastive", "medium",
             r"\b(?:solo|sólo|únicamente)\b[^.]{0,80}?,\s*(?:y\s+)?no\s+\w+(?:ar|er|ir)(?:l[oae]s?)?\b"
             r"|\ben\s+(?:vez|lugar)\s+de\s+\w"),
            (
                "keep-as-is",
                "preserve",
                "medium",
                r"\b(?:mantén|mantenga|mantener|conserva|conserve|deja|deje|dejar)\b.{0,40}?\b(?:como\s+está|igual|intact[oa]s?|sin\s+cambios)\b"
                r"|^(?:por\s+favor,?\s*)?(?:mantén|mantenga|conserva|conserve)\s+(?:el|la|los|las)\s+\w",
            ),
            ("later", "defer", "medium", r"\b(?:déjalo|dejalo|deja\s+\w+)\s+para\s+(?:después|luego|más\s+tarde)\b"),
            (
                "neg-item",
                "explicit",
                "medium",
                r"^(?:\W*)(?:no\s+(?:se\s+)?(?:\w+(?:ar|er|ir)|\w+(?:ará|erá|irá)n?)\b|sin\s+\w|nada\s+de\s+\w|ningun[oa]?s?\s+\w|ningún\s+\w|nunca\s+\w)",
                "item",
            ),
            (
                "ask-first",
                "restraint",
                "medium",
                r"\bespera\s+(?:mi\s+(?:confirmación|aprobación|visto\s+bueno|ok)|a\s+que\s+(?:te\s+)?(?:confirme|apruebe))\b"
                r"|\b(?:pregúntame|consúltame)\s+antes\b|\blo\s+hago\s+yo\b",
            ),
        ],
        "veto": [
            ("question", r"[?¿]"),
            ("hedged", r"\b(?:quizás|quizá|tal\s+vez|a\s+lo\s+mejor|creo\s+que|no\s+sé)\b"),
            ("no-need", r"\bno\s+(?:hace\s+falta|es\s+necesario|necesitas|hay\s+que)\b"),
        ],
    },
    "pt": {
        "instruction": [
            (
                "neg-imperative",
                "explicit",
                "high",
                r"\bn[ãa]o\s+(?:(?:o|a|os|as|me|se|lhe)\s+)?(?:mexa|mexe|altere|mude|modifique|remova|apague|delete|adicione|use|"
                r"faça|coloque|execute|rode|instale|mova|quebre|edite|renomeie|publique|atualize|escreva|reescreva|commite|comite|"
                r"suba|crie|toque|troque|mexam|alterem|mudem|"
                # the subjunctive of an act on the work or of a decision the agent takes alone:
                # "não duplique", "não invente"
                r"implemente|implementem|assuma|assumam|espere|confie|invente|inclua|gere|duplique|ignore|pule|prossiga|"
                r"avance|comece|inicie|utilize|chame|envie|salve|sobrescreva|exclua|misture|suponha|chute|esqueça|"
                r"hardcode|simplifique|contorne|desative|desabilite|force|refatore|reverta)\b",
            ),
            # a rule in the infinitive that opens the sentence: "Não usar X", "Não criar Y"
            # (not "não conseguir", "não saber")
            ("neg-infinitive", "explicit", "high",
             r"^\W*(?:e\s+)?n[ãa]o\s+(?!conseguir|saber|poder|ter\b|ser\b|estar\b|haver\b)\w+(?:ar|er|ir)\b"),
            # "nada pode ser apagado": nothing may be <done>
            ("nothing-may", "explicit", "medium", r"^\W*nada\s+(?:deve|pode|deverá)\s+ser\s+\w"),
            # a short answer that excludes a thing: "ok, sem X", "sem testes extras" (a sentence of one to three words)
            ("sem-x", "explicit", "medium",
             r"^\W*(?:(?:sim|ok|certo|isso|pode)\s*,\s*)?sem\s+[\w\"'`.@/-]+(?:\s+[\w\"'`.@/-]+){0,2}\s*[.!]?\s*$"),
            # look first: "antes de prosseguir, mostre ...", "explique e aguarde" (wait before acting)
            ("look-first", "restraint", "medium",
             r"^\W*antes\s+de\s+(?:continuar|prosseguir|implementar|come[çc]ar|iniciar|seguir|codar|alterar|mudar|executar)\b"
             r"|\b(?:responda|explique|diga)\b[^.]{0,60}?\be\s+aguarde\b"),
            ("never", "explicit", "high", r"\bnunca\s+(?:(?:o|a|os|as|me|se)\s+)?\w+(?:e|a|em|am)\b"),
            ("avoid", "explicit", "high", r"^(?:por\s+favor,?\s*)?evit(?:e|a|ar)\s+\w|\bproibido\b"),
            (
                "must-not",
                "explicit",
                "high",
                r"\b(?:você\s+|vc\s+)?não\s+(?:deve|deveria|pode\s+(?:mexer|alterar|mudar|apagar|remover))\b"
                r"|\bnão\s+quero\s+que\b",
            ),
            (
                "keep-as-is",
                "preserve",
                "medium",
                r"\b(?:mantenha|manter|mantém|preserve|conserve|deixe|deixa)\b.{0,40}?\b(?:como\s+está|igual|intact[oa]s?|sem\s+alteraç\w+)\b",
            ),
            ("later", "defer", "medium", r"\b(?:deixe|deixa)\s+(?:isso|isto|\w+)\s+para\s+(?:depois|mais\s+tarde)\b"),
            (
                "neg-item",
                "explicit",
                "medium",
                r"^(?:\W*)(?:não\s+(?:se\s+)?(?:\w+(?:ar|er|ir)|\w+(?:ará|erá|irá)|\w+(?:e|a))\b|sem\s+\w|nenhum[a]?s?\s+\w|nunca\s+\w)",
                "item",
            ),
            (
                "ask-first",
                "restraint",
                "medium",
                r"\bespere\s+(?:a\s+)?minha\s+(?:aprovação|confirmação|validação)\b|\b(?:pergunte[- ]me|me\s+pergunte|"
                r"me\s+consulte)\s+antes\b"
                r"|\beu\s+mesmo\s+faço\b"
                # "aguarde (a minha) confirmação para continuar", "espere meu ok"
                r"|\b(?:aguarde|espere)\s+(?:a\s+|pela\s+|por\s+)?(?:minha\s+|meu\s+)?(?:confirma[çc][ãa]o|aprova[çc][ãa]o|valida[çc][ãa]o|ok|retorno)\b",
            ),
            # "X, não Y" at a sentence's end, one word: "prefira SQLite, não Postgres" (not a question: the veto; not a
            # number: "o node aqui é o 20, não 18" corrects a fact)
            ("rather-than", "contrastive", "medium",
             r"\S,\s*n[ãa]o\s+(?!\d[\d.]*\s*[).]?\s*$)[\"'`“]?[\w./@-]+[\"'`”]?\s*[).]?\s*$|\bem\s+vez\s+de\s+\w"),
            # deferral: "vamos revisar X depois", "fica para depois", "deixamos isso para depois"
            ("later-vamos", "defer", "medium",
             r"^\W*(?:vamos|podemos)\s+\w+.{0,80}?\bdepois\s*[.!]?\s*$|\bfica\s+para\s+depois\b|\bdeixa(?:r|mos)\s+(?:\S+\s+)?para\s+depois\b"),
        ],
        "veto": [
            ("question", r"\?"),
            ("hedged", r"\b(?:talvez|acho\s+que|será\s+que|não\s+sei)\b"),
            ("no-need", r"\bnão\s+(?:precisa|é\s+necessário|tem\s+que)\b"),
        ],
    },
    "fr": {
        "instruction": [
            (
                "neg-imperative",
                "explicit",
                "high",
                r"^(?:(?:s'il\s+(?:te|vous)\s+pla[iî]t|svp|merci\s+de|surtout)\s*,?\s*)?(?:ne\s+|n['’]\s*)(?:(?:le|la|les|l['’]|y|en|me|lui|leur)\s*)*"
                # "n'oublie pas de V", "n'hésite pas à V": a reminder or an offer to do, not a rule against an act
                r"(?!oubliez?\b|h[ée]sitez?\b)\w+[sz]?\s+(?:pas|jamais|rien|plus)\b",
            ),
            (
                "merci-de-ne-pas",
                "explicit",
                "high",
                r"\bmerci\s+de\s+ne\s+(?:pas|jamais)\b|\b(?:il\s+ne\s+faut|tu\s+ne\s+dois|vous\s+ne\s+devez)\s+(?:pas|jamais)\b"
                r"|\bje\s+ne\s+veux\s+pas\s+que\s+(?:tu|vous)\b",
            ),
            (
                "pas-de",
                "explicit",
                "medium",
                r"(?:^|[,;]\s*)(?:et\s+)?(?:surtout\s+)?(?:pas|jamais)\s+(?:de\s+|d['’])\w",
            ),
            ("on-va-pas", "explicit", "medium", r"^(?:non,?\s*)?(?:on|nous)\s+(?:ne\s+)?(?:va|allons)\s+pas\s+\w"),
            # a requirement: "les migrations ne doivent PAS être modifiées", "ça ne devra jamais V"
            ("must-not", "explicit", "medium",
             r"\b(?:ne|n['’])\s*(?:doit|doivent|devra|devront|devrait|devraient)\s+(?:pas|jamais)\s+(?:être\s+)?\w"),
            (
                "avoid",
                "explicit",
                "high",
                r"^(?:merci\s+d['’]|s'il\s+te\s+plaît,?\s*)?évit(?:e|ez|er)\s+(?:de\s+|d['’])?\w|\binterdit\b",
            ),
            (
                "keep-as-is",
                "preserve",
                "medium",
                r"\b(?:garde|gardez|conserve|conservez|laisse|laissez)\b.{0,40}?\b(?:tel(?:le)?s?\s+quel(?:le)?s?|intact\w*|inchangé\w*|comme\s+(?:ça|c'est))\b"
                r"|^(?:s'il\s+te\s+plaît,?\s*)?(?:garde|gardez|conserve|conservez)\s+(?:le|la|les|l['’])\s*\w",
            ),
            (
                "neg-item",
                "explicit",
                "medium",
                r"^(?:\W*)(?:ne\s+(?:pas|jamais|rien)\s+\w|n['’]?\s*\w+\s+(?:pas|jamais|aucun\w*)\b|pas\s+(?:de|d['’])\s*\w|aucun\w*\s+\w|sans\s+\w|jamais\s+(?:de\s+)?\w)",
                "item",
            ),
            (
                "ask-first",
                "restraint",
                "medium",
                r"\battends?\s+(?:ma|mon|mes)\s+(?:validation|accord|feu\s+vert|confirmation|retour|go)\b|"
                r"\bdemande[sz]?[- ]moi\s+avant\b"
                r"|\bavant\s+de\s+\w+.{0,40}?,\s*demande[sz]?[- ]moi\b|\bje\s+(?:le\s+)?ferai\s+moi[- ]même\b"
                # "arrête-toi et me le signaler avant de continuer", "puis attendre ma validation"
                r"|\bme\s+(?:le\s+|la\s+|les\s+)?(?:signaler|demander|montrer|dire|pr[ée]venir)\b.{0,60}?\bavant\s+(?:de\s+|d['’])\w"
                r"|\battendre\s+(?:ma\s+|la\s+|une\s+|mon\s+)?(?:validation|accord|confirmation|feu\s+vert)\b",
            ),
        ],
        "veto": [
            ("question", r"\?"),
            ("hedged", r"\b(?:peut-être|je\s+pense|je\s+crois|je\s+ne\s+sais\s+pas)\b"),
            ("no-need", r"\b(?:pas\s+besoin|pas\s+nécessaire|pas\s+obligé)\b"),
        ],
    },
    "pl": {
        "instruction": [
            # "nie" + a 2nd-person imperative (-aj / -uj / -ij / -yj and the irregular ones), or a polite infinitive
            (
                "nie-imperative",
                "explicit",
                "high",
                r"\bnie\s+(?:(?:\S+\s+){0,2}?)(?:\w+(?:aj|uj|ij|yj)(?:cie|my)?|rób|róbcie|twórz|pisz|ruszaj|dotykaj|usuwaj|"
                r"zmieniaj|dodawaj|commituj|pushuj|instaluj|używaj|wrzucaj|kasuj|psuj|zmień|usuń|dodaj|rusz)\b"
                r"|\b(?:proszę|prosze)\s+(?:\S+\s+){0,3}?nie\s+\w+(?:ać|ić|yć|eć|ować)\b",
            ),
            ("must-not", "explicit", "high", r"\bnie\s+(?:wolno|możesz|mozesz|powinieneś|powinienes|należy|nalezy)\b"
             r"|\bzakaz\w*\b|\bzabronion\w*\b|\bw\s+żadnym\s+wypadku\b|\bnigdy\s+nie\b"),
            ("avoid", "explicit", "high", r"^(?:proszę\s+)?unikaj\w*\b"),
            (
                "keep-as-is",
                "preserve",
                "medium",
                r"\b(?:zostaw|pozostaw|zachowaj|utrzymaj)\w*\b.{0,40}?\b(?:bez\s+zmian|tak\s+jak\s+jest|jak\s+jest|nietknięt\w*)\b"
                r"|^(?:proszę\s+)?(?:zachowaj|utrzymaj)\s+\w",
            ),
            ("later", "defer", "medium",
             r"\b(?:na\s+później|zostaw\w*\s+(?:to\s+)?na\s+później|odłóż\w*|później\s+się\s+tym)"),
            (
                "ask-first",
                "restraint",
                "medium",
                r"\b(?:zapytaj|spytaj)\s+mnie\s+(?:przed|najpierw|zanim)\b|\bpoczekaj\s+na\s+(?:moją|moja|mój|moje)\s+\w+"
                r"|\bsam\s+(?:to\s+)?zrobię\b|\bzrobię\s+to\s+sam\b",
            ),
            (
                "neg-item",
                "explicit",
                "medium",
                r"^(?:\W*)(?:bez\s+\w|nie\s+\w|żadn\w*\s+\w|zadn\w*\s+\w|nigdy\s+\w)",
                "item",
            ),
        ],
        "veto": [
            ("question", r"\?"),
            ("hedged", r"\b(?:może|moze|chyba|wydaje\s+mi\s+się|myślę|nie\s+wiem)\b"),
            ("no-need", r"\bnie\s+(?:trzeba|musisz|musimy|potrzeba|jest\s+potrzebn\w*)\b"),
        ],
    },
    "de": {
        "instruction": [
            ("bitte-nicht", "explicit", "high", r"\bbitte\s+(?:\S+\s+){0,5}?(?:nicht|nie|niemals|keine?n?)\b"),
            (
                "nicht-verb",
                "explicit",
                "high",
                r"\b(?:nicht|nie|niemals)\s+(?:\S+\s+){0,4}?(?:ändern|anfassen|löschen|entfernen|hinzufügen|committen|pushen|verwenden|"
                r"benutzen|nutzen|umbenennen|überschreiben|installieren|ausführen|anpassen|bearbeiten|modifizieren|verändern|anlegen)\b",
            ),
            (
                "imperative-nicht",
                "explicit",
                "high",
                r"^(?:\S+\s+)?(?:ändere|ändert|lösche|löscht|entferne|entfernt|füge|committe|pushe|verwende|benutze|nutze|fass|rühr|"
                r"mach|installiere|überschreibe|bearbeite)\b[^.]{0,60}?\b(?:nicht|nie|niemals)\b",
            ),
            ("keine", "explicit", "medium", r"^(?:und\s+)?keine?n?\s+(?:neuen?\s+)?\w"
             # a short answer that excludes a thing: "ja, ohne X" (one to three words)
             r"|^\W*(?:(?:ja|ok|gut)\s*,\s*)?ohne\s+[\w\"'`.@/-]+(?:\s+[\w\"'`.@/-]+){0,2}\s*[.!]?\s*$"),
            (
                "must-not",
                "explicit",
                "high",
                r"\bauf\s+keinen\s+fall\b|\b(?:darfst|dürft|sollst|solltest)\b.{0,60}?\b(?:nicht|nie|niemals|keine?n?)\b",
            ),
            ("avoid", "explicit", "high", r"^(?:bitte\s+)?vermeide\w*\b|\bverboten\b"),
            # a dislike stated as a rule: "ich will nicht X", "ich möchte keine X" (not a past "wollte")
            ("dont-want", "explicit", "low",
             r"\b(?:ich|wir)\s+(?:will|wollen|möchte|möchten|mag)\s+(?:\S+\s+){0,3}?(?:nicht|keine?[nmrs]?|nie)\b(?![^.]*\baber\b)"),
            # "wir sollten verhindern, dass X", "stelle sicher, dass X nicht überschrieben wird"
            ("prevent", "explicit", "medium",
             r"\b(?:müssen|muss|sollten|sollen)\s+(?:\S+\s+){0,2}?verhindern\b"
             r"|^\W*(?:bitte\s+)?stelle?\s+sicher,?\s+(?:dass?|daß)\b[^.]{0,160}?\b(?:nicht|nie|keine?[nmrs]?)\b"),
            # "X sollte nicht A, sondern B": a contrast in a rule (a modal before it; not a diagnosis
            # "das Problem ist nicht A, sondern B")
            ("rather-than", "contrastive", "medium",
             r"\b(?:sollt?e?n?|soll|sollst|muss|müssen|bitte)\b[^.]{0,60}?\bnicht\b[^.]{0,100}?,\s*sondern\b"
             r"|\bstatt\s+(?:\S+\s+){0,3}?(?:zu\s+)?\w+en\b[^.]{0,60}?\b(?:nutze|verwende|benutze|mach)\b"),
            (
                "keep-as-is",
                "preserve",
                "medium",
                r"\b(?:behalte|belasse|lass|lasse)\b.{0,40}?\b(?:bei|so|wie\s+(?:es|sie|er)\s+(?:ist|sind)|unverändert|in\s+ruhe)\b"
                r"|\b(?:beibehalten|unverändert\s+lassen)\b",
            ),
            (
                "neg-item",
                "explicit",
                "medium",
                r"^(?:\W*)(?:(?:und\s+)?keine?[nmrs]?\s+\w|ohne\s+\w|nicht\s+\w|niemals\s+\w|nie\s+\w)"
                r"|\b(?:nicht|nie|niemals)\s+(?:\S+\s+){0,3}?\w+(?:en|ern|eln)\s*[.]?\s*$|\bbleib(?:t|en)\s+(?:\S+\s+){0,2}?unverändert\b",
                "item",
            ),
            (
                "ask-first",
                "restraint",
                "medium",
                r"\bwarte\s+auf\s+(?:mein|meine)\s+(?:ok|okay|freigabe|bestätigung|zustimmung|go)\b|\bfrag\s+mich\s+(?:vorher|zuerst|bevor)\b"
                r"|\bmach\s+(?:das|ich)\s+selbst\b|\bdas\s+mache\s+ich\s+selbst\b"
                # the user decides: "bevor ich mich entscheide", "ich entscheide, wann"
                r"|\bbevor\s+ich\b[^.]{0,60}?\b(?:entscheid\w*|freigebe|bestätige|zustimme)\b"
                r"|\b(?:ich|der\s+(?:user|nutzer|benutzer)|user)\s+entscheide[t]?,?\s+(?:selbst,?\s+)?(?:ob|wann|was|welche)\b",
            ),
        ],
        "veto": [
            ("question", r"\?"),
            ("hedged", r"\b(?:vielleicht|eventuell|ich\s+glaube|ich\s+denke|weiß\s+nicht)\b"),
            (
                "no-need",
                r"\b(?:nicht\s+nötig|nicht\s+notwendig|muss\s+nicht|musst\s+nicht|brauchst\s+nicht|brauchen\s+nicht)\b",
            ),
        ],
    },
    "nl": {
        "instruction": [
            # "verander de config niet", "gebruik geen extra dependencies", "pas X niet aan": the verb first, then
            # the negation (no question, no "ik denk")
            ("neg-imperative", "explicit", "high",
             r"^(?:\S+\s+)?(?:verander|wijzig|pas|raak|verwijder|gebruik|voeg|commit|push|installeer|maak|doe|zet|schrijf|"
             r"hernoem|overschrijf|bewerk|draai|deploy|verplaats|herschrijf|upload|publiceer)\b[^.]{0,60}?\b(?:niet|nooit|geen)\b"),
            ("must-not", "explicit", "high",
             r"\b(?:mag|mogen)\b[^.]{0,60}?\b(?:niet|nooit|geen)\b|\bin\s+geen\s+geval\b|\bverboden\b"),
            ("avoid", "explicit", "high", r"^(?:graag\s+|alsjeblieft\s+)?(?:vermijd|voorkom)\b"),
            # a dislike stated as a rule: "ik wil geen X", "we willen niet dat X"
            ("dont-want", "explicit", "low",
             r"\b(?:ik|wij|we)\s+(?:wil|willen|wens|wensen)\s+(?:\S+\s+){0,3}?(?:niet|geen|nooit)\b"),
            ("geen", "explicit", "medium", r"^(?:en\s+)?geen\s+\w"
             # a short answer that excludes a thing: "ja, zonder X" (one to three words)
             r"|^\W*(?:(?:ja|ok|oké|goed)\s*,\s*)?zonder\s+[\w\"'`.@/-]+(?:\s+[\w\"'`.@/-]+){0,2}\s*[.!]?\s*$"),
            # "X moet niet A, maar B": a contrast in a rule (a modal before it); "in plaats van A, gebruik B"
            ("rather-than", "contrastive", "medium",
             r"\b(?:moet|moeten|mag|mogen|graag|wil)\b[^.]{0,60}?\bniet\b[^.]{0,100}?,\s*maar\b"
             r"|\bin\s+plaats\s+van\b[^.]{0,60}?\b(?:gebruik|doe|maak|neem|schrijf)\b"),
            ("keep-as-is", "preserve", "medium",
             r"\b(?:laat|houd|hou|behoud)\b.{0,40}?\b(?:zoals\s+(?:het|ze|hij)\s+(?:is|zijn)|ongewijzigd|intact|hetzelfde|"
             r"met\s+rust)\b|\bongewijzigd\s+laten\b"),
            ("later", "defer", "medium",
             r"\b(?:doe|doen|bewaar|laat)\b[^.]{0,40}?\bvoor\s+later\b|\b(?:voorlopig|voor\s+nu)\s+(?:nog\s+)?niet\b"),
            ("neg-item", "explicit", "medium", r"^\W*(?:geen\s+\w|zonder\s+\w|niet\s+\w|nooit\s+\w)", "item"),
            ("ask-first", "restraint", "medium",
             r"\bwacht\s+op\s+(?:mijn|m'n)\s+(?:ok|oké|akkoord|goedkeuring|bevestiging|go)\b"
             r"|\bvraag\s+(?:het\s+)?(?:mij|me)\s+(?:eerst|vooraf|voordat)\b|\b(?:dat\s+doe\s+ik|ik\s+doe\s+dat)\s+zelf\b"),
        ],
        "veto": [
            ("question", r"\?"),
            ("hedged", r"\b(?:misschien|wellicht|eventueel|ik\s+denk|ik\s+geloof|weet\s+(?:ik\s+)?niet)\b"),
            ("no-need", r"\b(?:niet\s+nodig|hoeft\s+niet|hoef\s+(?:je\s+|jij\s+)?niet|niet\s+noodzakelijk)\b"),
            ("dismissal", r"\bgeen\s+(?:idee|probleem|zorgen|punt)\b|\bmaakt\s+niet\s+uit\b"),
        ],
    },
    "ru": {
        "instruction": [
            (
                "neg-imperative",
                "explicit",
                "high",
                r"(?:^|[\s,.;:!—-])не\s+(?:\w+\s+)?(?:трогай|трогайте|меняй|меняйте|изменяй|изменяйте|удаляй|удаляйте|добавляй|"
                r"добавляйте|делай|делайте|коммить|коммитьте|пушь|пушьте|используй|используйте|ломай|ломайте|переименовывай|"
                r"запускай|запускайте|устанавливай|устанавливайте|пиши|пишите|создавай|создавайте|правь|правьте|редактируй|"
                r"редактируйте|переписывай|переписывайте|\w+(?:айте|яйте|йте|ьте))\b",
            ),
            ("never", "explicit", "high", r"\bникогда\s+не\b"),
            ("forbidden", "explicit", "medium", r"\b(?:запрещено|нельзя)\b"),
            ("no-need-act", "explicit", "medium",
             r"(?:^|[,;:]\s)\W*(?:и\s+|а\s+|но\s+)?(?:\w+\s+)?не\s+(?:нужно|надо)\s+\w+(?:ать|ять|еть|ить|уть|ти)(?:ся)?\b"),
            # "X должен быть не A, а B": a contrast in a rule (a modal before it; not "проблема не в A, а в B")
            ("rather-than", "contrastive", "medium",
             r"\bдолж(?:ен|на|но|ны)\b[^.]{0,40}?\bне\s+[^.,]{1,60},\s*а\s+\w|\bвместо\s+\w+[^.]{0,40}?\b\w+(?:й|йте)\b"),
            (
                "keep-as-is",
                "preserve",
                "medium",
                r"\b(?:оставь|оставьте|сохрани|сохраните)\b.{0,40}?\b(?:как\s+есть|без\s+изменений)\b",
            ),
            (
                "neg-item",
                "explicit",
                "medium",
                r"^(?:\W*)(?:не\s+\w+(?:ать|ять|еть|ить|уть|ти)(?:ся)?\b|без\s+\w|никаких\s+\w|никогда\s+не\b)",
                "item",
            ),
            (
                "ask-first",
                "restraint",
                "medium",
                r"\bспроси\s+(?:меня\s+)?(?:сначала|перед|прежде)|\bжди\s+моего\s+(?:подтверждения|одобрения|ок)|\bя\s+сам\s+(?:сделаю|это\s+сделаю)",
            ),
        ],
        "veto": [
            ("question", r"\?"),
            ("hedged", r"\b(?:может\s+быть|наверное|возможно|кажется)\b"),
            # "не нужно" is a refusal when it opens a sentence on an act (no-need-act): "не нужно трогать X"
            ("no-need", r"\bне\s+обязательно\b|\bне\s+(?:нужно|надо)\b(?!\s+\w+(?:ать|ять|еть|ить|уть|ти)(?:ся)?\b)"
             r"|^\W*(?:\w+\s+)?не\s+(?:нужно|надо)\s+(?:беспокоиться|волноваться|извиняться)"),
        ],
    },
    "uk": {
        "instruction": [
            (
                "neg-imperative",
                "explicit",
                "high",
                r"(?:^|[\s,.;:!—-])не\s+(?:\w+\s+)?(?:чіпай|чіпайте|змінюй|змінюйте|видаляй|видаляйте|додавай|додавайте|"
                r"роби|робіть|комміть|пуш|використовуй|використовуйте|ламай|ламайте|запускай|запускайте|пиши|пишіть|"
                r"створюй|створюйте|редагуй|редагуйте|переписуй|переписуйте|\w+(?:айте|яйте|уйте|іть))\b",
            ),
            ("never", "explicit", "high", r"\bніколи\s+не\b"),
            ("forbidden", "explicit", "medium", r"\b(?:заборонено|не\s+можна)\b"),
            ("keep-as-is", "preserve", "medium",
             r"\b(?:залиш|залиште|збережи|збережіть)\b.{0,40}?\b(?:як\s+є|без\s+змін)\b"),
            ("neg-item", "explicit", "medium",
             r"^(?:\W*)(?:не\s+\w+(?:ати|яти|іти|ити|ути)(?:ся)?\b|без\s+\w|жодних\s+\w|ніколи\s+не\b)", "item"),
            ("ask-first", "restraint", "medium",
             r"\b(?:спитай|запитай)\s+(?:мене\s+)?(?:спочатку|перед)|\bчекай\s+(?:на\s+)?мого\s+(?:підтвердження|схвалення)"),
        ],
        "veto": [
            ("question", r"\?"),
            ("hedged", r"\b(?:може|мабуть|можливо|здається)\b"),
            ("no-need", r"\bне\s+(?:потрібно|треба|обов'язково)\b"),
        ],
    },
    "id": {
        "instruction": [
            ("jangan", "explicit", "high", r"\b(?:tolong\s+|mohon\s+)?jangan\s+\w"),
            ("must-not", "explicit", "high", r"\b(?:tidak\s+boleh|dilarang)\b"),
            ("keep-as-is", "preserve", "medium",
             r"\b(?:biarkan|pertahankan)\b.{0,40}?\b(?:seperti\s+(?:itu|apa\s+adanya)|apa\s+adanya|tanpa\s+perubahan)\b"
             r"|^(?:tolong\s+)?pertahankan\s+\w"),
            ("neg-item", "explicit", "medium", r"^(?:\W*)(?:tanpa\s+\w|tidak\s+(?:ada\s+)?\w+|jangan\s+\w)", "item"),
            ("ask-first", "restraint", "medium", r"\btanya(?:kan)?\s+(?:saya|aku)\s+(?:dulu|sebelum)\b"
                                                 r"|\btunggu\s+(?:persetujuan|konfirmasi)\s+(?:saya|aku)\b"),
        ],
        "veto": [
            ("question", r"\?"),
            ("hedged", r"\b(?:mungkin|kayaknya|sepertinya)\b"),
            ("no-need", r"\btidak\s+(?:perlu|usah|harus)\b|\bgak\s+usah\b|\bnggak\s+usah\b"),
        ],
    },
    "it": {
        "instruction": [
            (
                "neg-imperative",
                "explicit",
                "high",
                r"\bnon\s+(?:(?:lo|la|li|le|ci|mi|ti|si|ne)\s+)?(?:toccare|modificare|cambiare|cancellare|eliminare|rimuovere|aggiungere|"
                r"usare|utilizzare|fare|mettere|eseguire|installare|spostare|rompere|editare|rinominare|pubblicare|aggiornare|"
                r"scrivere|riscrivere|committare|pushare|toccarlo|modificarlo|cambiarlo|toccate|modificate|cambiate)\b",
            ),
            ("never", "explicit", "high", r"\bmai\s+(?:(?:lo|la|li|le)\s+)?\w+are\b|\bnon\s+\w+are\s+mai\b"),
            ("avoid", "explicit", "high", r"^(?:per\s+favore,?\s*)?evit(?:a|are|ate)\s+(?:di\s+)?\w|\bvietato\b"),
            ("must-not", "explicit", "high", r"\bnon\s+(?:devi|dovresti|deve|devono|voglio\s+che)\b"),
            (
                "keep-as-is",
                "preserve",
                "medium",
                r"\b(?:mantieni|mantenere|conserva|lascia|lasciare)\b.{0,40}?\b(?:com['’]\s*è|invariat[oaie]|intatt[oaie]|così\s+com['’]\s*è)\b",
            ),
            (
                "later",
                "defer",
                "medium",
                r"\b(?:lascia(?:lo)?|rimanda(?:lo)?)\s+(?:\w+\s+)?(?:a\s+dopo|per\s+dopo|più\s+tardi)\b",
            ),
            (
                "neg-item",
                "explicit",
                "medium",
                r"^(?:\W*)(?:non\s+(?:si\s+)?\w+(?:are|ere|ire)\b|senza\s+\w|nessun[oa]?\s+\w|mai\s+\w)",
                "item",
            ),
            (
                "ask-first",
                "restraint",
                "medium",
                r"\baspetta\s+(?:la\s+)?mia\s+(?:conferma|approvazione)\b|\bchiedimi\s+prima\b|\blo\s+faccio\s+io\b",
            ),
        ],
        "veto": [
            ("question", r"\?"),
            ("hedged", r"\b(?:forse|magari|penso\s+che|credo\s+che|non\s+so)\b"),
            ("no-need", r"\bnon\s+(?:serve|è\s+necessario|c['’]è\s+bisogno|bisogna)\b"),
        ],
    },
    "vi": {
        "instruction": [
            (
                "neg-imperative",
                "explicit",
                "high",
                r"(?:^|[,.;:!]\s*)(?:xin\s+|vui\s+lòng\s+|làm\s+ơn\s+)?(?:đừng|chớ|không\s+được|cấm)\s+\w",
            ),
            ("must-not", "explicit", "high", r"\b(?:không\s+được\s+phép|tuyệt\s+đối\s+không|nghiêm\s+cấm)\b"),
            ("avoid", "explicit", "high", r"^(?:xin\s+|vui\s+lòng\s+)?tránh\s+\w"),
            ("keep-as-is", "preserve", "medium", r"\b(?:giữ\s+nguyên|giữ\s+lại|không\s+thay\s+đổi)\b"),
            ("later", "defer", "medium", r"\b(?:để\s+sau|làm\s+sau|để\s+lần\s+sau)\b"),
            (
                "ask-first",
                "restraint",
                "medium",
                r"\b(?:hỏi\s+(?:tôi|mình|em|anh)\s+trước|(?:tôi|mình)\s+sẽ\s+tự\s+làm)\b",
            ),
            ("neg-item", "explicit", "medium", r"^(?:\W*)(?:không\s+\w|bỏ\s+qua\s+\w)", "item"),
        ],
        "veto": [
            ("question", r"\?|\b(?:không\s*\?|chưa\s*\?|được\s+không)\s*$"),
            ("hedged", r"\b(?:có\s+lẽ|có\s+thể|hình\s+như|chắc\s+là)\b"),
            ("no-need", r"\bkhông\s+(?:cần|phải)\b"),
        ],
    },
}

#: A parenthetical negation on an instruction, in every Latin-script table: "scrivi un riepilogo (non tutto il log)",
#: "usar nomes claros (user_count, não \"n\")" — English's ``paren-not``.
_PAREN_NEGATIONS = {"it": r"non|mai|senza", "pt": r"n[ãa]o|nunca|sem", "es": r"no|nunca|sin",
                    "fr": r"pas|jamais|sans|non", "de": r"nicht|kein\w*|ohne|nie", "nl": r"niet|geen|zonder|nooit"}
_NOT_KNOWING = r"(?!(?:so|sei|sé|sais|weiß|weiss)\b)"  # "(non so)": not knowing, no rule
for _lang, _neg in _PAREN_NEGATIONS.items():
    _FOREIGN_SPEC[_lang]["instruction"].append(
        ("paren-not", "contrastive", "medium",
         rf"\S\s*\((?:[^()]{{0,40}}?,\s*)?(?:{_neg})\s+{_NOT_KNOWING}[^()]{{2,60}}\)"))
del _lang, _neg

#: Languages the rules judge reads.
READABLE = ("en",) + tuple(sorted(_FOREIGN_SPEC))


@dataclass(frozen=True)
class ForeignTable:
    lang: str
    instruction: tuple[tuple[Cue, re.Pattern[str]], ...]
    veto: tuple[tuple[Cue, re.Pattern[str]], ...]


def _compile(lang: str, spec: dict[str, list[tuple[str, ...]]]) -> ForeignTable:
    flags = re.IGNORECASE | re.UNICODE
    ins = tuple((Cue(n, lang, "instruction", f, pat, s, scope=rest[0] if rest else "any"), re.compile(pat, flags))
                for n, f, s, pat, *rest in spec["instruction"])
    veto = tuple((Cue(n, lang, "veto", None, pat), re.compile(pat, flags)) for n, pat in spec["veto"])
    return ForeignTable(lang, ins, veto)


class _Tables(Mapping[str, ForeignTable]):
    """The tables by language, each compiled on its first use (most texts need none or one)."""

    def __init__(self, spec: dict[str, dict[str, list[tuple[str, ...]]]]) -> None:
        self._spec = spec
        self._compiled: dict[str, ForeignTable] = {}

    def __getitem__(self, lang: str) -> ForeignTable:
        table = self._compiled.get(lang)
        if table is None:
            table = self._compiled[lang] = _compile(lang, self._spec[lang])
        return table

    def __contains__(self, lang: object) -> bool:
        return lang in self._spec

    def __iter__(self) -> Iterator[str]:
        return iter(self._spec)

    def __len__(self) -> int:
        return len(self._spec)


FOREIGN: Mapping[str, ForeignTable] = _Tables(_FOREIGN_SPEC)

#: Structural and matcher cues of the carry decision (language-free unless noted).
CARRY_CUES: tuple[Cue, ...] = (
    Cue(
        "quoted",
        "*",
        "carry",
        None,
        "at least half of the rule's word trigrams are in the summary (its user-message list)",
        "high",
    ),
    Cue("verbatim", "*", "carry", None, "the rule (or its key part) appears verbatim", "high"),
    Cue(
        "negated-mention",
        "en",
        "carry",
        None,
        "a negated sentence with the rule's key words (verb class, stems)",
        "high",
    ),
    Cue("user-keeps", "en", "carry", None, "the user / someone else does the action", "high"),
    Cue("preserve-cue", "en", "carry", None, "keep / retain / unchanged with the rule's words", "high"),
    Cue("defer-cue", "en", "carry", None, "later / deferred with the rule's words", "high"),
    Cue("restraint-cue", "en", "carry", None, "instruct / manual / ask with the rule's words", "high"),
    Cue("acronym-negated", "en", "carry", None, "a negated sentence naming the rule's acronym", "high"),
    Cue("stays", "en", "carry", None, "the thing left untouched / still in place", "high"),
    Cue("someone-else", "en", "carry", None, "someone else acts on the thing", "high"),
    Cue("no-thing", "en", "carry", None, "'no X' / 'without X' governing the thing", "high"),
    Cue("thing-removed", "en", "carry", None, "the summary says the forbidden thing was removed / replaced", "medium"),
    Cue("partial", "en", "carry", None, "half the key words and the action in a cued sentence (uncertain)", "low"),
    Cue(
        "code-name",
        "*",
        "carry",
        None,
        "a code name of the rule next to a negation / keep word (rules in other languages)",
        "medium",
    ),
)
#: Why a summary is taken not to carry an instruction (the alert's reason).
DROP_CUES: tuple[Cue, ...] = (
    Cue(
        "unquoted-again",
        "*",
        "drop",
        None,
        "an earlier summary quoted the rule; this one neither quotes nor restates it, nor names any of its code names",
        "high",
    ),
    Cue(
        "unquoted-again-traced",
        "*",
        "drop",
        None,
        "the same, but this summary still names one of the rule's code names (or, in English, two thirds of its naming "
        "words), in a sentence with a negation, keep or deferral word",
        "medium",
    ),
    Cue(
        "unquoted-again-unstated",
        "*",
        "drop",
        None,
        "an earlier summary quoted the rule; this one names its code names only in sentences without a negation, keep "
        "or deferral word (the thing is there, the rule about it is not)",
        "medium",
    ),
    Cue(
        "removed",
        "*",
        "drop",
        None,
        "the summary names the thing (in another language: a code name of the keep rule) while "
        "saying it was removed / replaced",
        "high",
    ),
    Cue(
        "plan-no-trace",
        "*",
        "drop",
        None,
        "a rule of an approved plan with code names (files, identifiers, numbers) of which the summary names none",
        "high",
    ),
    Cue("plan-unstated", "*", "drop", None, "a rule of an approved plan the summary does not state", "medium"),
    Cue(
        "plan-named-unstated",
        "*",
        "drop",
        None,
        "a plan rule whose code names the summary still names, but never beside a negation, keep, deferral or scope "
        "word (the thing is there, the rule about it is not)",
        "medium",
    ),
    Cue(
        "not-quoted",
        "*",
        "drop",
        None,
        "the summary lists the user's messages since the last one and not this rule's "
        "(typed rules survive their first compaction in that list: weak)",
        "low",
    ),
    Cue(
        "not-quoted-conditional",
        "*",
        "drop",
        None,
        "a short typed rule with an explicit exception ('never V unless I say so') the list does not quote: a summary "
        "carries it by stating the exception or the limit, in other words (balanced and up, round 11)",
        "low",
    ),
    Cue(
        "not-quoted-no-trace",
        "*",
        "drop",
        None,
        "the same, and nothing of the rule is left anywhere in the summary (no code "
        "name; in English, under a third of its naming words)",
        "medium",
    ),
    Cue(
        "not-quoted-long-no-trace",
        "*",
        "drop",
        None,
        "a long message's rule the list does not quote and of which nothing is left anywhere in the summary",
        "low",
    ),
    Cue(
        "not-quoted-long-own",
        "en",
        "drop",
        None,
        "a long message's rule the list does not quote, read by a strong cue, in a message that is the user's own "
        "writing (paragraphs and points, no headings, fences or tag lines of a pasted document or template); English "
        "and, since round 11, the Latin- and Cyrillic-script tables",
        "medium",
    ),
    Cue(
        "not-quoted-long",
        "*",
        "drop",
        None,
        "the same for a long message (lists describe long messages, not quote them)",
        "low",
    ),
    Cue("unmatched", "*", "drop", None, "nothing in the summary states it", "medium"),
    Cue("uncertain", "en", "drop", None, "only a partial restatement (dropped at the recall end only)", "low"),
    Cue("opaque", "*", "drop", None, "the summary text is not available", "high"),
)


@lru_cache(maxsize=1)
def english_cues() -> tuple[Cue, ...]:
    return _english_rows()


def all_cues() -> tuple[Cue, ...]:
    """Every row: English instruction cues and vetoes, the other languages', carry and drop cues."""
    rows = list(english_cues())
    for table in FOREIGN.values():
        rows += [c for c, _ in table.instruction] + [c for c, _ in table.veto]
    return tuple(rows) + CARRY_CUES + DROP_CUES


def strength_of(cue: str) -> str:
    """The strength of an instruction cue by name (``"ja:neg-imperative"``, ``"es:neg-imperative"``, ``"contrast"``)."""
    lang, _, name = cue.rpartition(":")
    if lang in FOREIGN:
        for c, _ in FOREIGN[lang].instruction:
            if c.name == name:
                return c.strength
    for c in english_cues():
        if c.name == name and c.decision == "instruction":
            return c.strength
    return "low"


# --------------------------------------------------------------------------- languages


@dataclass(frozen=True)
class Level:
    """What one precision level lets alert."""

    name: str
    instruction: frozenset[str]  # strengths of instruction cues read
    drops: frozenset[str]  # drop cues that alert (others count as carried)
    foreign_drops: frozenset[str]  # the same, for instructions read in another language than the summary's
    uncertain_drops: bool  # a partial restatement does not carry
    high_only: frozenset[str] = (
        frozenset()
    )  # drop cues that alert only for a rule read by an instruction cue of strength high
    rule_files_kept: bool = False  # a rule file (nested CLAUDE.md) stays in view after a boundary without re-injection


#: Precise: both decisions strong — an instruction cue of strength high or medium and a structural drop (a quote
#: lost with no code name left, a plan rule none of whose code names is left, a keep rule whose thing was removed),
#: or, for an English rule and a summary with no list of the user's messages (OpenHands), no restatement at all.
#: The thing left of the rule only a mention (no sentence naming it has a negation / keep / deferral word) is
#: precise too (``*-unstated``). A long message's rule the summary's list does not quote is recall only: across the
#: four folds of round 4 (DEV, T, T2, H) that drop scored 40 / 28, on round 5's P + R 0 / 64 (pasted documents,
#: templates, status dumps). A rule file read once (nested CLAUDE.md) counts
#: as in view after a boundary at precise and balanced, as the labels take it (root alerts for it: H 0 / 10, no gold
#: rule from a rule file in any fold); recall still asks for its re-injection.
#: A short message the list does not quote, with some of its words left elsewhere ('not-quoted'), alerts at precise too
#: (round 7, all six folds: 13 / 2 before, 13 / 0 after the two false readings were fixed by their form).
#: A long message's rule in the user's own writing (no heading, fence or tag line: not a pasted document), read by a
#: strong cue, unconditional, English, alerts at precise too ('not-quoted-long-own', round 10, eight folds: 7 / 0);
#: round 11: also a rule of a Latin- or Cyrillic-script table (eleven folds: 2 / 0; Chinese and Japanese long messages
#: stay out: 0 / 14, mostly "不要 X" inside a quoted list of a long spec).
_PRECISE = frozenset({"unquoted-again", "unquoted-again-unstated", "removed", "plan-no-trace", "plan-named-unstated",
                      "not-quoted-no-trace", "unmatched", "not-quoted", "not-quoted-long-own"})
_LONG = frozenset({"not-quoted-long", "not-quoted-long-no-trace"})
_BALANCED = _PRECISE | {"unquoted-again-traced", "plan-unstated", "not-quoted-conditional"}
#: The levels of the precision setting (``--judge-precision`` / ``CG_JUDGE_PRECISION``); measured in docs/REAL_LOGS.md.
PRECISION_LEVELS: dict[str, Level] = {
    "precise": Level("precise", frozenset({"high", "medium"}), _PRECISE,
                     _PRECISE - {"unmatched", "not-quoted-no-trace"}, False, rule_files_kept=True),
    "balanced": Level("balanced", frozenset(STRENGTHS), _BALANCED, _BALANCED - {"unmatched"}, False,
                      rule_files_kept=True),
    "recall": Level("recall", frozenset(STRENGTHS), _BALANCED | _LONG | {"uncertain"}, _BALANCED | _LONG, True),
}
DEFAULT_PRECISION = "precise"

_SCRIPTS = (
    ("ja", re.compile(r"[\u3040-\u30ff\u31f0-\u31ff]")),  # kana
    ("ko", re.compile(r"[\uac00-\ud7af\u1100-\u11ff]")),  # hangul
    ("zh", re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")),  # han without kana
    ("ru", re.compile(r"[\u0400-\u04ff]")),  # Cyrillic (uk when it has ґ є і ї)
    ("el", re.compile(r"[\u0370-\u03ff]")),
    ("he", re.compile(r"[\u0590-\u05ff]")),
    ("ar", re.compile(r"[\u0600-\u06ff]")),
    ("hi", re.compile(r"[\u0900-\u097f]")),
    ("th", re.compile(r"[\u0e00-\u0e7f]")),
)
_UKRAINIAN = re.compile(r"[ґєії]", re.I)
_LETTER = re.compile(r"[^\W\d_]", re.UNICODE)
_ENGLISH_WORDS = frozenset(
    "the a an and or to of in on for is are was were be it this that with not don't dont do does no you we i me my "
    "please can should would will use add fix make it's let's just also but so if then keep what why how when all "
    "from at by as have has need want now here there one more any some only new yes ok".split())
#: Code in a line (ignored when telling its language); a run of code stops at CJK text, which has no spaces to end it.
_NC = r"[^\s\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]"
_CJK_W = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af"
#: Code is ignored when telling a line's language; a word with a digit is code only in a Latin-script run ("v2"):
#: a CJK sentence with a number in it ("最多 2 个") is prose.
_CODE = re.compile(rf"`[^`]*`|{_NC}*(?:[/\\_=<>{{}}()\[\]#]|\.\w){_NC}*|\b[A-Z]{{2,}}\b"
                   rf"|(?:(?![{_CJK_W}])\w)*\d(?:(?![{_CJK_W}])\w)*")
_LATIN = (
    "en",
    "es",
    "fr",
    "de",
    "pt",
    "it",
    "nl",
    "pl",
    "tr",
    "id",
    "vi",
    "cs",
    "sv",
    "da",
    "no",
    "fi",
    "ro",
    "hu",
    "ca",
)


@lru_cache(maxsize=1)
def _identifier():
    from stream.adapters.compaction.langid_model import load_identifier  # py3langid's, from a decompressed cached copy

    return load_identifier(_LATIN)


#: Dutch words that are no English, German or Romance word: one of them tells a line is Dutch.
_DUTCH_MARKERS = frozenset("geen niet nooit het een zonder alsjeblieft graag wordt zoals voorlopig gebruik verander "
                           "wijzig ongewijzigd hoeft moeten mogen willen".split())


@lru_cache(maxsize=65_536)
def language_of(line: str) -> str:
    """The language of one line of prose: ISO 639-1, or ``"und"`` (too little to tell: read as English).

    Scripts decide first (kana -> ja, also one kana among han; hangul -> ko, han -> zh, Cyrillic -> ru / uk, ...); a
    Latin-script line of at least three words that is not plainly English goes to
    py3langid (restricted to Latin-script languages; deterministic). Code (paths,
    identifiers, back-ticked spans) is ignored.
    """
    prose = _CODE.sub(" ", unicodedata.normalize("NFKC", line[:2000]))  # the start of a line tells its language
    letters = _LETTER.findall(prose)
    if len(letters) < 2:
        return "und"
    if _SCRIPTS[0][1].search(prose) and _SCRIPTS[2][1].search(prose):
        return "ja"  # Chinese has no kana: one particle (は, の) in a line of kanji is Japanese
    for lang, script in _SCRIPTS:
        hits = len(script.findall(prose))
        if hits >= 2 and (hits * 4 >= len(letters) or lang in ("ja", "ko")):
            return "uk" if lang == "ru" and _UKRAINIAN.search(prose) else lang
    words = re.findall(r"[^\W\d_]+(?:'[^\W\d_]+)?", prose.lower())
    if any(w in _DUTCH_MARKERS for w in words):
        return "nl"  # a short Dutch line ("Geen API keys in code") is too short for py3langid, and half English
    if len(words) < 4:
        return "und"
    english = sum(w in _ENGLISH_WORDS for w in words)
    if prose.isascii() and english * 5 >= len(words):
        return "en"
    lang, confidence = _identifier().classify(" ".join(words))
    accented = not "".join(letters).isascii()  # terse ASCII fragments ("Map event token data") are English, mostly
    if lang != "en" and (confidence >= 0.9 or accented and (confidence >= 0.6 and english * 3 < len(words)
                                                            or confidence >= 0.5 and not english)):
        return lang
    if not english:  # langid unsure: two function words of one of the tables' languages and none of English tell it
        for code, function_words in _FUNCTION_WORDS.items():
            if sum(w in function_words for w in words) >= 2:
                return code
    return "en" if english else "und"


def main_language(langs: list[str]) -> str:
    """The language of a message from its lines' languages: another language than English that most of the lines
    told (at least half of them) is the message's; else English."""
    told = [lang for lang in langs if lang != "und"]
    other = sorted({lang for lang in told if lang != "en"})
    if not other:
        return "en"
    best = max(other, key=told.count)
    return best if told.count(best) * 2 >= len(told) else "en"


def language_in(line: str, main: str) -> str:
    """The language of one line of a message whose language is ``main``: a line too short to tell (a plan bullet
    "Sin dependencias nuevas") or not plainly English is read in the message's language."""
    lang = language_of(line)
    if main == "ja" and lang == "zh":
        return "ja"  # a line of kanji alone ("実行時間: 大幅短縮") in a Japanese message is Japanese
    if main == "en" or lang not in ("en", "und"):
        return lang
    words = re.findall(r"[^\W\d_]+(?:'[^\W\d_]+)?", _CODE.sub(" ", line).lower())
    if lang == "en" and words and sum(w in _ENGLISH_WORDS for w in words) * 3 >= len(words):
        return "en"
    return main


_FUNCTION_WORDS = {
    "fr": frozenset("le la les de des du une et est pas ne que qui pour dans sur avec au aux ce cette ces".split()),
    "es": frozenset("el los las de del una y es que para con por pero como esto esta este".split()),
    "pt": frozenset("os as de do da dos das um uma que para com por mas como isso este esta".split()),
    "de": frozenset("der die das und ist nicht ein eine mit für auf zu den dem des nur auch".split()),
    "it": frozenset("il lo la gli le di del della che per con non una è sono questo questa anche".split()),
    "nl": frozenset("de het een en niet van dat die op te voor met zijn er maar ook als wat geen".split()),
    "vi": frozenset("không của và là có cho này các những được với một trong để".split()),
    "pl": frozenset("nie się jest to na w z że do jak co ale czy od po tak tylko jeszcze już".split()),
    "id": frozenset("yang dan di ini itu untuk dengan tidak dari ke ada akan juga saja bisa sudah".split()),
}

#: Tables of Latin-script languages: their lines are cut into sentences like English ones.
LATIN_TABLES = frozenset({"es", "pt", "fr", "de", "nl", "it", "vi", "pl", "id"})
#: Tables of a script that ends its sentences with ". " (Latin, Cyrillic): a line is cut into sentences before reading.
SPACED_TABLES = LATIN_TABLES | {"ru", "uk"}
