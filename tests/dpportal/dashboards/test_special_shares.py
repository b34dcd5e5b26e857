"""The release dashboard shows the share of zeros (and of declared special values) of every numeric column
as numbers: real, synthetic and a real sample, from the file checks of the evaluation."""

from __future__ import annotations

import html
import re

from dpportal.dashboards.models import Evaluation


def test_the_shares_of_zeros_are_shown_as_numbers(world):
    ev = Evaluation.objects.get(release=world.release)
    assert ev.status == Evaluation.DONE
    income = next(c for c in ev.results["file_checks"]["numeric"] if c["name"] == "income")
    assert income["specials"] == ["0"]
    page = html.unescape(world.client(world.owner).get(f"/releases/{world.release.pk}/dashboard/").content.decode())
    table = page.split('id="special-shares"')[1].split("</table>")[0]
    row = re.search(r"<tr><td>income</td><td>0</td><td>([\d.]+)%</td><td>([\d.]+)%</td><td>([\d.]+)%</td></tr>", table)
    assert row, table
    shown = [float(x) / 100 for x in row.groups()]
    expected = [income[side]["shares"]["0"] for side in ("real", "synthetic", "floor")]
    assert all(abs(a - b) <= 0.0005 for a, b in zip(shown, expected)), (shown, expected)
    assert "<tr><td>age</td>" not in table  # its bounds (18-90) exclude 0 and it declares no special value
