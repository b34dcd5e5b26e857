"""A small ready-to-release dataset (uploaded, schema confirmed, budget set), shared by the
in-process job tests and the out-of-process crash driver."""

from __future__ import annotations

import io

CSV = "age,sex,income\n" + "".join(f"{20 + i % 50},{'fm'[i % 2]},{'<=50K' if i % 3 else '>50K'}\n" for i in range(400))


def ready_dataset(owner, *, epsilon_cap: str = "1", delta_cap: str = "0"):
    from dpportal.datasets.models import Dataset
    from dpportal.datasets.services import confirm_schema
    from dpportal.datasets.upload import store_upload
    from dpportal.ledger import services as ledger
    from mechanisms.schema import Schema

    fh = io.BytesIO(CSV.encode())
    fh.name = "small.csv"
    dataset = store_upload(fh, owner=owner, name="small", markers=["", "?", "NA"])
    confirm_schema(dataset, Schema.from_dict(dataset.schema_draft))
    ledger.set_caps(dataset, epsilon=epsilon_cap, delta=delta_cap, user=owner)
    return Dataset.objects.get(pk=dataset.pk)


def plan(dataset, owner, *, epsilon: str = "0.5", params: dict | None = None, rows: int = 50):
    from dpportal.releases.services import ReleaseRequest, plan_release

    return plan_release(dataset, owner, ReleaseRequest("baseline", epsilon, "0", params or {}, rows))
