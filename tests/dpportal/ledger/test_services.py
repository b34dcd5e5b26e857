"""Ledger semantics: exact caps, reserve/settle/refund rules, caps changes, deletes that free
nothing, tamper detection, exports."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.core.management import call_command
from django.db import connection
from django.urls import reverse

from dpportal.ledger import services
from dpportal.ledger.models import Budget, LedgerEntry
from dpportal.ledger.units import EPS_UNIT

pytestmark = pytest.mark.django_db


def budget_row(dataset) -> Budget:
    return Budget.objects.get(dataset=dataset)


# ---------------------------------------------------------------------------------------------- exactness


def test_nine_releases_of_one_ninth_fill_a_cap_of_one_and_a_tenth_is_refused(dataset, personas, make_release):
    user = personas.owner
    services.set_caps(dataset, epsilon="1", delta="0", user=user)
    for _ in range(9):
        r = make_release(epsilon="1/9")
        services.reserve(dataset=dataset, release=r, user=user, epsilon="1/9", delta="0")
        services.settle(r)
    b = budget_row(dataset)
    assert b.eps_spent == b.eps_cap == EPS_UNIT
    left = services.remaining(dataset)["epsilon"]
    assert (left["spent"], left["remaining"]) == ("1", "0")
    for tiny in ("1/9", "1e-9", "1/1000000000000000000000"):  # any positive cost, even below one unit
        with pytest.raises(services.BudgetExceeded, match="0 remaining of cap 1"):
            services.reserve(dataset=dataset, release=make_release(epsilon=tiny), user=user, epsilon=tiny, delta="0")
    assert services.verify_dataset(dataset.pk).ok


def test_float_sum_would_have_overspent_but_units_do_not():
    # the DP Creator bug this design avoids
    assert sum([1 / 9] * 9) > 1.0
    from dpportal.ledger.units import epsilon_cap_units, epsilon_cost_units

    assert 9 * epsilon_cost_units("1/9") == epsilon_cap_units("1")


def test_refusal_says_what_remains_and_charges_nothing(budget, personas, make_release):
    user = personas.owner
    r = make_release(epsilon="0.7")
    services.reserve(dataset=budget, release=r, user=user, epsilon="0.7", delta="0")
    before = list(LedgerEntry.objects.values_list("hash", flat=True))
    with pytest.raises(services.BudgetExceeded) as exc:
        services.reserve(dataset=budget, release=make_release(epsilon="0.5"), user=user, epsilon="0.5", delta="0")
    assert "epsilon 0.5 requested, 0.3 remaining of cap 1" in str(exc.value)
    assert list(LedgerEntry.objects.values_list("hash", flat=True)) == before
    assert budget_row(budget).eps_reserved == 7 * EPS_UNIT // 10


def test_delta_cap_is_enforced_separately(budget, personas, make_release):
    user = personas.owner
    services.reserve(dataset=budget, release=make_release(delta="6e-6"), user=user, epsilon="0.1", delta="6e-6")
    with pytest.raises(services.BudgetExceeded, match=r"delta 5e-6 requested, 4e-6 remaining of cap 1e-5"):
        services.reserve(dataset=budget, release=make_release(delta="5e-6"), user=user, epsilon="0.1", delta="5e-6")


def test_no_budget_means_no_release(dataset, personas, make_release):
    with pytest.raises(services.BudgetNotSet, match="no privacy budget"):
        services.reserve(dataset=dataset, release=make_release(), user=personas.owner, epsilon="0.1", delta="0")


@pytest.mark.parametrize("eps", ["0", "-1", "abc", "nan", "inf", "1/0", "20000"])
def test_bad_epsilon_is_rejected_with_its_value(budget, personas, make_release, eps):
    with pytest.raises(services.InvalidAmount, match="epsilon"):
        services.reserve(dataset=budget, release=make_release(), user=personas.owner, epsilon=eps, delta="0")
    assert budget_row(budget).eps_reserved == 0


def test_one_reservation_per_release(budget, personas, make_release):
    from django.db import IntegrityError, transaction

    r = make_release()
    services.reserve(dataset=budget, release=r, user=personas.owner, epsilon="0.1", delta="0")
    with pytest.raises(IntegrityError), transaction.atomic():
        services.reserve(dataset=budget, release=r, user=personas.owner, epsilon="0.1", delta="0")
    assert budget_row(budget).eps_reserved == EPS_UNIT // 10  # the second attempt rolled back whole


# ---------------------------------------------------------------------------------------------- settle/refund


def test_settle_moves_reserved_to_spent_once(budget, personas, make_release):
    r = make_release(epsilon="0.25")
    services.reserve(dataset=budget, release=r, user=personas.owner, epsilon="0.25", delta="0")
    first = services.settle(r)
    again = services.settle(r)  # a redelivered job must not charge twice
    assert first.pk == again.pk
    b = budget_row(budget)
    assert (b.eps_spent, b.eps_reserved) == (EPS_UNIT // 4, 0)
    reservation = LedgerEntry.objects.get(kind="reserve", release_pk=r.pk)
    assert reservation.state == "spent"


def test_refund_only_if_data_was_never_touched(budget, personas, make_release):
    untouched, touched = make_release(epsilon="0.2"), make_release(epsilon="0.3")
    for r in (untouched, touched):
        services.reserve(dataset=budget, release=r, user=personas.owner, epsilon=r.epsilon, delta="0")
    type(touched).objects.filter(pk=touched.pk).update(data_touched=True, status="failed")
    # the caller's object is stale (data_touched False in memory): the ledger reads the database
    with pytest.raises(services.RefundRefused, match="touched private data"):
        services.refund(touched)
    services.refund(untouched)
    b = budget_row(budget)
    assert (b.eps_spent, b.eps_reserved) == (0, 3 * EPS_UNIT // 10)
    services.close_failed(touched, reason="boom")
    b = budget_row(budget)
    assert (b.eps_spent, b.eps_reserved) == (3 * EPS_UNIT // 10, 0)
    with pytest.raises(services.LedgerError, match="already refunded"):
        services.settle(untouched)
    assert services.verify_dataset(budget.pk).ok


def test_close_failed_refunds_a_job_that_never_read_data(budget, personas, make_release):
    r = make_release(epsilon="0.5")
    services.reserve(dataset=budget, release=r, user=personas.owner, epsilon="0.5", delta="0")
    entry = services.close_failed(r, reason="worker could not load the mechanism")
    assert entry.kind == "refund"
    assert services.remaining(budget)["epsilon"]["remaining"] == "1"


# ---------------------------------------------------------------------------------------------- caps


def test_caps_first_set_raised_with_warning_lowered_never_below_used(dataset, personas, make_release):
    user = personas.owner
    first = services.set_caps(dataset, epsilon="1", delta="0", user=user)
    assert first.kind == "cap" and first.warning == ""
    services.reserve(dataset=dataset, release=make_release(epsilon="0.6"), user=user, epsilon="0.6", delta="0")
    raised = services.set_caps(dataset, epsilon="2", delta="1e-6", user=user)
    assert "cap raised from epsilon 1" in raised.warning and raised.note == raised.warning
    with pytest.raises(services.CapTooLow, match="epsilon cap 0.5 is below the 0.6 already spent or reserved"):
        services.set_caps(dataset, epsilon="0.5", delta="1e-6", user=user)
    lowered = services.set_caps(dataset, epsilon="0.6", delta="1e-6", user=user)
    assert lowered.note == "cap lowered"
    assert services.set_caps(dataset, epsilon="0.6", delta="1e-6", user=user) is None  # unchanged
    assert services.remaining(dataset)["epsilon"]["remaining"] == "0"
    assert list(LedgerEntry.objects.filter(kind="cap").values_list("epsilon", flat=True)) == ["1", "2", "0.6"]


def test_only_the_steward_changes_caps(dataset, personas):
    for who in ("analyst", "other_steward"):
        with pytest.raises(services.LedgerError, match="only the dataset's steward"):
            services.set_caps(dataset, epsilon="5", delta="0", user=getattr(personas, who))
    assert not Budget.objects.filter(dataset=dataset).exists()


# ---------------------------------------------------------------------------------------------- deletes


def test_deleting_a_release_or_the_raw_file_frees_nothing(budget, personas, make_release):
    user = personas.owner
    done, pending = make_release(epsilon="0.4"), make_release(epsilon="0.3")
    for r in (done, pending):
        services.reserve(dataset=budget, release=r, user=user, epsilon=r.epsilon, delta="0")
    services.settle(done)
    snapshot = [(e.seq, e.hash, e.release_pk) for e in LedgerEntry.objects.order_by("seq")]
    left = services.remaining(budget)
    pending_pk = pending.pk
    done.delete()
    pending.delete()
    type(budget).objects.filter(pk=budget.pk).update(file_path="", raw_deleted_at="2026-01-01T00:00:00Z")
    assert [(e.seq, e.hash, e.release_pk) for e in LedgerEntry.objects.order_by("seq")] == snapshot
    assert services.remaining(type(budget).objects.get(pk=budget.pk)) == left
    assert left["epsilon"]["remaining"] == "0.3"
    with pytest.raises(services.RefundRefused):  # a deleted release cannot prove it never read data
        services.refund(type(pending)(pk=pending_pk))
    assert services.verify_dataset(budget.pk).ok


def test_a_dataset_with_a_ledger_cannot_be_deleted(budget):
    from django.db.models import ProtectedError

    with pytest.raises(ProtectedError):
        budget.delete()


def test_entries_are_append_only_through_the_orm(budget):
    entry = LedgerEntry.objects.first()
    entry.note = "edited"
    with pytest.raises(ValueError, match="append-only"):
        entry.save()
    with pytest.raises(ValueError, match="append-only"):
        entry.delete()


# ---------------------------------------------------------------------------------------------- tampering


@pytest.fixture
def busy_ledger(budget, personas, make_release):
    user = personas.owner
    for eps in ("0.1", "0.2", "0.3"):
        r = make_release(epsilon=eps)
        services.reserve(dataset=budget, release=r, user=user, epsilon=eps, delta="0")
        services.settle(r)
    assert services.verify_dataset(budget.pk).ok
    return budget


@pytest.mark.parametrize(
    "sql, expected",
    [
        (
            "UPDATE ledger_ledgerentry SET eps_units = eps_units / 2 WHERE seq = 3",
            "entry #3: content does not match its hash",
        ),
        ("UPDATE ledger_ledgerentry SET epsilon = '0.01' WHERE seq = 2", "entry #2: content does not match"),
        ("UPDATE ledger_ledgerentry SET username = 'someone' WHERE seq = 1", "entry #1: content does not match"),
        ("DELETE FROM ledger_ledgerentry WHERE seq = 7", "budget head (#7) does not match the last entry (#6)"),
        ("UPDATE ledger_budget SET eps_spent = 0", "budget eps_spent is 0 units"),
        ("UPDATE ledger_budget SET eps_cap = eps_cap * 10", "budget eps_cap"),
    ],
)
def test_tampering_in_the_database_is_detected(busy_ledger, sql, expected):
    with connection.cursor() as cur:
        cur.execute(sql)
    report = services.verify_dataset(busy_ledger.pk)
    assert not report.ok
    assert any(expected in p for p in report.problems), report.problems


def test_rehashing_a_modified_entry_still_breaks_the_chain(busy_ledger):
    from dpportal.ledger.units import chain_hash

    e = LedgerEntry.objects.get(dataset=busy_ledger, seq=3)
    e.eps_units //= 2
    forged = chain_hash(e.chain_fields(), e.prev_hash)
    LedgerEntry.objects.filter(pk=e.pk).update(eps_units=e.eps_units, hash=forged)
    problems = services.verify_dataset(busy_ledger.pk).problems
    assert any("entry #4: previous-hash link broken" in p for p in problems), problems


def test_verify_ledger_command_reports_and_fails_on_tampering(busy_ledger):
    out = io.StringIO()
    call_command("verify_ledger", stdout=out)
    assert "OK" in out.getvalue() and "1 dataset" in out.getvalue()
    LedgerEntry.objects.filter(dataset=busy_ledger, seq=2).update(note="x")
    out = io.StringIO()
    with pytest.raises(SystemExit) as exc:
        call_command("verify_ledger", stdout=out)
    assert exc.value.code == 1
    assert "BROKEN" in out.getvalue() and "entry #2" in out.getvalue()


# ---------------------------------------------------------------------------------------------- exports


def test_json_and_csv_exports_agree_and_neutralize_formulas(busy_ledger, personas):
    from django.contrib.auth import get_user_model

    get_user_model().objects.filter(pk=personas.owner.pk).update(username="=HYPERLINK(1)")
    personas.owner.refresh_from_db()
    services.set_caps(busy_ledger, epsilon="3", delta="1e-5", user=personas.owner)
    data = services.entries_json(busy_ledger)
    assert data["chain"]["ok"] and len(data["entries"]) == 8
    spends = [e for e in data["entries"] if e["kind"] == "spend"]
    assert sum(e["epsilon_float"] for e in spends) == pytest.approx(0.6)
    assert data["budget"]["epsilon"]["spent"] == "0.6"
    assert json.loads(json.dumps(data)) == data  # plain data
    rows = list(csv.DictReader(io.StringIO(services.entries_csv(busy_ledger))))
    assert [r["hash"] for r in rows] == [e["hash"] for e in data["entries"]]
    assert rows[-1]["user"] == "'=HYPERLINK(1)"


def test_timeline_is_cumulative(busy_ledger):
    t = services.timeline(busy_ledger)
    assert t["epsilon"] == pytest.approx([0.1, 0.3, 0.6])
    assert t["cap_epsilon"] == [1.0]


def _spent(budget, user, make_release, epsilon, delta, report):
    release = make_release(epsilon=epsilon, delta=delta)
    services.reserve(dataset=budget, release=release, user=user, epsilon=release.epsilon, delta=release.delta)
    type(release).objects.filter(pk=release.pk).update(report=json.loads(json.dumps(report)))
    services.settle(type(release).objects.get(pk=release.pk))
    return release


def _mechanism_report(name: str) -> dict:
    """A fitted mechanism's privacy report as the worker stores it (the audit case's table, seeded)."""
    from mechanisms.noise import Noise
    from mechanisms.runner import build
    from mechanisms.source import TableSource
    from tests.privacy.cases import CASES

    case = CASES[name]
    mech = build(name, case.schema, epsilon=case.epsilon, delta=case.delta, params=case.params, noise=Noise.seeded(0))
    mech.fit(TableSource(case.schema, frame=case.frame))
    return mech.privacy_cost().to_dict()


def test_tighter_accounting_reads_the_typed_events_of_a_gaussian_and_a_laplace_release(budget, personas, make_release):
    from mechanisms.accountants import compose_releases
    from mechanisms.accounting import event_from_dict

    user = personas.owner
    services.set_caps(budget, epsilon="10", delta="1e-4", user=user)
    mst, baseline = _mechanism_report("mst"), _mechanism_report("baseline")
    assert {e["kind"] for e in mst["events"]} >= {"gaussian"} and {e["kind"] for e in baseline["events"]} == {"laplace"}
    _spent(budget, user, make_release, "1", "1e-5", mst)
    _spent(budget, user, make_release, "1", "0", baseline)
    _spent(budget, user, make_release, "0.5", "0", {"guarantee": "pure", "details": {}})  # no events: its (eps, delta)
    info = services.tighter_accounting(budget)
    assert info["available"] and info["informational"] and info["by_events"] == 2
    assert info["basic_epsilon"] == pytest.approx(2.5) and info["events_above_claim"] == []
    assert info["epsilon"] < 2.5 and info["tighter"]  # PLD beside the basic sum
    assert info["rdp_epsilon"] is None  # one release has no events: no RDP figure
    expected = compose_releases(
        [
            ([event_from_dict(e) for e in mst["events"]], 1.0, 1e-5),
            ([event_from_dict(e) for e in baseline["events"]], 1.0, 0.0),
            (None, 0.5, 0.0),
        ],
        1e-5,
    )
    assert info["epsilon"] == pytest.approx(expected["pld_epsilon"], abs=1e-6)
    assert services.remaining(budget)["epsilon"]["spent"] == "2.5"  # admission still uses the sum


def test_tighter_accounting_covers_aim_by_rdp_and_names_a_release_with_a_wrong_sigma(
    budget, personas, make_release, client
):
    user = personas.owner
    services.set_caps(budget, epsilon="10", delta="1e-4", user=user)
    aim = _mechanism_report("aim")
    assert {e["kind"] for e in aim["events"]} == {"gaussian", "zcdp"}  # measurements and selections
    _spent(budget, user, make_release, "1", "1e-5", aim)
    info = services.tighter_accounting(budget)
    assert info["available"] and info["rdp_epsilon"] == pytest.approx(1.0, rel=1e-6)  # its own zCDP accounting
    assert info["events_above_claim"] == []
    broken = json.loads(json.dumps(aim))
    for e in broken["events"]:
        if e["kind"] == "gaussian":
            e["sigma"] /= 2  # the broken variant: the noise it reports is half what its epsilon needs
    release = _spent(budget, user, make_release, "1", "1e-5", broken)
    info = services.tighter_accounting(budget)
    assert info["events_above_claim"] == [release.pk]
    client.force_login(user)
    page = client.get(reverse("dpportal-ledger", args=[budget.pk])).content.decode()
    assert "RDP (zCDP parts" in page and "entered by the privacy events" in page
    assert f"Release {release.pk}: the noise in the privacy report accounts for more" in page


def test_release_events_ignores_reports_without_usable_events():
    read = services.informational.release_events
    assert read({}) is None and read({"events": []}) is None
    assert read({"events": [{"kind": "gaussian", "sigma": -1, "sensitivity": 1}]}) is None
    assert read({"events": [{"kind": "laplace", "scale": 2.0, "sensitivity": 1.0}]})[0].scale == 2.0


def test_tighter_accounting_is_never_above_the_basic_sum(budget, personas, make_release):
    """An (epsilon, delta) release that enters by its worst-case PLD (its events have none here, e.g. a
    zCDP part) holds the whole delta as infinite loss; any other release's PLD adds its truncated tails
    (~1e-16) to that mass, so the PLD alone answers infinity at the total delta. The basic sum is a valid
    bound at that delta: the figure shown is never above it."""
    user = personas.owner
    services.set_caps(budget, epsilon="10", delta="1e-4", user=user)
    _spent(budget, user, make_release, "1", "1e-5", {"events": [{"kind": "zcdp", "rho": 0.02}]})
    _spent(budget, user, make_release, "1", "0", {"events": [{"kind": "laplace", "scale": 4.0, "sensitivity": 2.0}]})
    info = services.tighter_accounting(budget)
    assert info["available"] and info["basic_epsilon"] == pytest.approx(2.0)
    assert info["epsilon"] <= 2.0 and not info["tighter"]
