"""SCIM under bad input (issue 28, item 4): a filter value of the wrong type for its
attribute, `null` in an ordering comparison, a startIndex no database takes, an id out of
any column's range, an unknown path — each a SCIM 4xx (`invalidFilter`, `invalidValue`,
404) that writes nothing, never a 500. The fuzz test is in tests/test_fuzz_surfaces.py."""

import pytest

from tests.test_hostile_input import changed, db_state

from .conftest import assert_scim_error

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("resource", ["Users", "Groups"])
@pytest.mark.parametrize(
    "expression",
    [
        "meta.created gt 5",  # a number for a dateTime: a 500 before
        "meta.created gt 1.5",
        "meta.lastModified le true",
        "meta.created gt null",
        'meta.created co "2026"',
        "displayName gt null",
        'meta.created eq "12 June"',
    ],
)
def test_a_filter_value_its_attribute_cannot_take_is_invalid_filter(scim, resource, expression):
    before = db_state()
    assert_scim_error(scim.get(resource, filter=expression), 400, "invalidFilter")
    assert not changed(before, db_state())


def test_date_time_filters_compare_as_times(scim, workspace):
    everyone = scim.get("Users").json()["totalResults"]
    assert everyone > 0
    after = scim.get("Users", filter='meta.created gt "2000-01-01T00:00:00Z"').json()
    assert after["totalResults"] == everyone
    before = scim.get("Users", filter='meta.lastModified lt "2000-01-01T00:00:00+01:00"').json()
    assert before["totalResults"] == 0
    groups = scim.get("Groups", filter='meta.created ge "2000-01-01T00:00:00"').json()
    assert groups["totalResults"] == 2


@pytest.mark.parametrize("resource", ["Users", "Groups"])
@pytest.mark.parametrize("start", ["99999999999999999999", str(2**31), str(2**63)])
def test_a_start_index_past_any_list_is_invalid_value(scim, resource, start):
    """A DataError on PostgreSQL (the offset overflows a bigint), an odd 409 on SQLite."""
    before = db_state()
    assert_scim_error(scim.get(resource, startIndex=start), 400, "invalidValue")
    assert not changed(before, db_state())


def test_the_largest_start_index_is_an_empty_page(scim):
    page = scim.get("Users", startIndex=2**31 - 1).json()
    assert (page["startIndex"], page["itemsPerPage"], page["Resources"]) == (2**31 - 1, 0, [])


@pytest.mark.parametrize(
    "path", ["Groups/99999999999999999999", "Groups/-1", "Groups/0", "Users/99999999999999999999"]
)
def test_an_id_out_of_any_columns_range_is_404_and_matches_nothing(scim, path):
    assert_scim_error(scim.get(path), 404)
    resource, res_id = path.split("/")
    found = scim.get(resource, filter=f'id eq "{res_id}"')
    assert found.status_code == 200 and found.json()["totalResults"] == 0
