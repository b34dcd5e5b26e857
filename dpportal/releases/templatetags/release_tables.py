"""{% release_tables release %}: the release page's Tables section (the tables its mechanism measured or
published; a draw shows its original release's)."""

from __future__ import annotations

from django import template

from dpportal.releases import tables

register = template.Library()


@register.inclusion_tag("releases/_tables.html")
def release_tables(release):
    if release.status != release.DONE:
        return {"tables": []}
    origin = release.origin()
    return {
        "tables": tables.summaries(tables.load(release)),
        "from_release": origin.pk if release.is_draw else None,
        "tables_pk": origin.pk,
        "mechanism": origin.mechanism,
    }
