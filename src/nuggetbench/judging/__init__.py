"""LLM judges, above the LLM layer and the measures: graded judgments that fill a run's holes
(UMBRELA's 0-3 scale), their agreement with human qrels, and nugget assignment scoring generated
answers (AutoNuggetizer's scores).

* :mod:`.grading`: the 0-3 prompt, robust parsing of ``##final score: G``, :func:`judge_pairs`;
* :mod:`.holes`: :func:`judge_holes` (``nuggetbench judge DATASET RUN... --depth k``);
* :mod:`.agreement`: :func:`judge_agreement` (``nuggetbench judge DATASET --agreement``);
* :mod:`.answers`: :func:`assign_answers` (``nuggetbench answers NUGGETS ANSWERS...``);
* :mod:`.creation`: :func:`create_nuggets` (``nuggetbench nuggets DATASET -o FILE``).
"""

from nuggetbench.judging.agreement import AgreementOutcome, cohen_kappa, judge_agreement
from nuggetbench.judging.answers import AnswersOutcome, assign_answers, nugget_scores
from nuggetbench.judging.client import judging_client
from nuggetbench.judging.document_nuggets import NuggetCreation, create_nuggets
from nuggetbench.judging.files import (
    agreement_run_files,
    answers_files,
    judge_run_files,
    nuggets_for_dataset,
)
from nuggetbench.judging.grading import Judgment, judge_pairs, parse_final_score
from nuggetbench.judging.holes import JudgeOutcome, find_holes, judge_holes

__all__ = [
    "NuggetCreation",
    "create_nuggets",
    "nuggets_for_dataset",
    "AnswersOutcome",
    "answers_files",
    "assign_answers",
    "nugget_scores",
    "AgreementOutcome",
    "JudgeOutcome",
    "Judgment",
    "agreement_run_files",
    "cohen_kappa",
    "find_holes",
    "judge_agreement",
    "judge_holes",
    "judge_pairs",
    "judge_run_files",
    "judging_client",
    "parse_final_score",
]
