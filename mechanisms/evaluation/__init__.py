"""Evaluation of a synthetic table against the real one: the code that reads raw data after a release.

THIS PACKAGE IS NOT PRIVATE. Every number it returns is computed from the raw (prepared) real data:
the results are for the data steward only and must never be attached to a download or shown to an
analyst. Its randomness (subsampling, train/test splits, random features) is therefore not privacy
relevant and comes from seeded numpy Generators (:func:`utility.evaluate`, :mod:`fidelity`).

Modules: ``utility`` (:func:`~utility.evaluate`, the utility report, below) built from ``metrics``,
``encoding``, ``sections``, ``tstr`` and ``readings``; ``tables`` (a table read onto the public scale);
``cli`` (``python -m mechanisms evaluate``); ``fidelity`` (the statistician's checks of the file an
analyst downloads, at full resolution, against a real floor).

The utility report compares both tables on the PUBLIC schema scale: numeric columns clipped to the
declared bounds, categories mapped to the declared list (:meth:`~mechanisms.schema.Schema.prepare`).
Metric families, following SmartNoise Eval, MOSTLY AI's QA report, synthcity and the papers' own
measures:

* per column: total variation distance (TVD) over the public cells (:meth:`Schema.to_cells`),
  1-Wasserstein distance for numeric columns (absolute and divided by the public range), mean / std /
  quantiles side by side, and the cell histograms for overlays;
* pairs: TVD of the 2-way cell marginals (a seeded sample when there are more than ``MAX_PAIRS``),
  suppressed / fabricated 2-way combinations (SmartNoise Eval), an association matrix (Pearson for
  numeric-numeric, Cramér's V for categorical-categorical, the correlation ratio eta for mixed pairs)
  for both tables and its difference;
* whole table: pMSE (Snoke et al. 2018; Snoke & Slavković, PSD 2018) with a CART and with a logistic
  regression, each with its null value and the ratio to it; the maximum mean discrepancy (MMD) with a
  Gaussian kernel (exact for small samples, random Fourier features otherwise; DP-MERF uses the same
  features);
* machine learning (when a target is given): train on synthetic, test on real (TSTR) with the twelve
  classifier families of the DP-MERF evaluation (scikit-learn equivalents; HistGradientBoosting stands
  in for XGBoost, which is not installed), beside the train-on-real baseline;
* privacy sanity (empirical, informative only, NOT a privacy guarantee): exact-match rate and distance
  to the closest real record (DCR) of synthetic rows, compared with real holdout rows.

Large tables are subsampled; every subsampled section states the rows used and the fraction.
"""
