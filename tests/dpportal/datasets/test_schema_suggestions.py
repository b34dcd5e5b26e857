"""The schema page says where each suggested range comes from: a natural domain, or the data's minimum
and maximum, with a top code pointed out; always as a suggestion to confirm as public knowledge."""

from __future__ import annotations

from tests.personas import make_dataset

TEXT = "weeks worked,gains,age\n" + "".join(
    f"{i % 53},{99999 if i < 20 else 0 if i % 3 else 100 + i},{17 + i % 74}\n" for i in range(300)
)


def test_the_page_names_the_source_of_each_suggested_range(world):
    d = make_dataset(world.owner, text=TEXT, schema=None, budget=None)
    page = world.client(world.owner).get(f"/datasets/{d.pk}/schema/").content.decode()
    assert "[0.0, 52.0] <span" in page and "the natural range of weeks in a year" in page
    assert "[17.0, 90.0] <span" in page and "the data&#x27;s minimum and maximum" in page
    assert "99999 looks like a top code" in page
    assert page.count("confirm it only as public knowledge") == 3
