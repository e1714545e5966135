"""Search follows curation on PostgreSQL (team mode's backend): the cases of
tests/retrieval/test_search_curation.py, run against tsvector search, ts_rank and the
fallback vector scan (no pgvector on the test server)."""

from __future__ import annotations

import pytest

from tests.retrieval.test_search_curation import (
    test_a_bad_status_is_refused_and_says_what_to_use,
    test_a_hypothesis_ranks_below_a_confirmed_row_of_equal_text_match,
    test_a_hypothesis_ranks_below_by_meaning_too,
    test_a_retired_row_is_absent_by_default_and_found_labelled_with_status_all,
    test_a_retired_row_is_absent_by_meaning_too,
    test_a_superseded_row_names_its_successor_in_search_and_get_observations,
    test_an_agent_written_row_is_labelled_in_search_observations_and_timeline,
    test_demoted_rows_stay_searchable,
    test_the_timeline_labels_rows_no_longer_true,
)

pytestmark = [pytest.mark.django_db, pytest.mark.team, pytest.mark.usefixtures("pg_backend")]

__all__ = [
    "test_a_bad_status_is_refused_and_says_what_to_use",
    "test_a_hypothesis_ranks_below_a_confirmed_row_of_equal_text_match",
    "test_a_hypothesis_ranks_below_by_meaning_too",
    "test_a_retired_row_is_absent_by_meaning_too",
    "test_a_retired_row_is_absent_by_default_and_found_labelled_with_status_all",
    "test_a_superseded_row_names_its_successor_in_search_and_get_observations",
    "test_an_agent_written_row_is_labelled_in_search_observations_and_timeline",
    "test_demoted_rows_stay_searchable",
    "test_the_timeline_labels_rows_no_longer_true",
]
