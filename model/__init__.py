"""The pure domain model: scenario, workload/partition/cache, queueing, storage,
analytic prediction and profiles. No I/O beyond reading embedded package data.

Data flows one way: ``Scenario`` + ``Profile`` -> ``model.predict.predict``
(or ``sim.run.simulate``) -> ``Prediction``.
"""

__all__ = ["Scenario", "Profile", "Prediction", "predict", "InputError"]


def __getattr__(name):
    # Lazy re-exports keep `import model.workload` light.
    if name == "Scenario":
        from .scenario import Scenario
        return Scenario
    if name == "Profile":
        from .profile import Profile
        return Profile
    if name == "Prediction":
        from .prediction import Prediction
        return Prediction
    if name == "predict":
        from .predict import predict
        return predict
    if name == "InputError":
        from .errors import InputError
        return InputError
    raise AttributeError(name)
