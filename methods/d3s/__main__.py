from methods._tool import run_package

raise SystemExit(run_package("d3s"))
