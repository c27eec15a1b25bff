"""drsg.kernel — what every layer may use and that imports nothing else of drsg.

The one error tree (``errors``), the settings registry and loader (``settings``), the data model's
values and their JSON dialect (``values``), AS OF parsing (``asof``), analyser language names
(``languages``), vector metric names (``metrics``), logging setup (``logs``) and the process's
counters and histograms that ``/metrics`` shows (``telemetry``).
"""
