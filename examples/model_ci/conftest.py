"""Option of the model-CI example: --no-hps scores without High-Precision Scoring."""


def pytest_addoption(parser):
    parser.addoption("--no-hps", action="store_true", default=False,
                     help="keep the bi-encoder's dot product in bf16 (the example's check then fails)")
