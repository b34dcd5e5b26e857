"""Merge of the release-label (h18b) and cancel/queue (h19) branches of the releases app."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("releases", "0002_h18b_release_labels"),
        ("releases", "0003_h19_queue_estimate"),
    ]
    operations = []
