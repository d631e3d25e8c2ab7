"""The pure domain model: scenario, workload, the compiled rack and its mechanisms,
the analytic solver, profiles and run kinds. No I/O beyond reading embedded
package data.

Data flows one way: ``Scenario`` + ``Profile`` -> :func:`model.rack.compile_rack`
-> ``RackSpec`` -> a solver (:func:`predict` here, or ``sim``'s simulators)
-> ``Prediction``.

``from model import predict`` gives the analytic prediction function, always
(it is a plain function here, not a lazily resolved name that a submodule of
the same name could replace). For notebooks, ``import kvperf`` is the
documented entry point (docs/api.md).
"""

__all__ = ["Scenario", "Profile", "Prediction", "predict", "predict_many", "compile_rack",
           "InputError"]


def predict(scenario, profile):
    """The analytic prediction of a scenario under a profile (:func:`model.solvers.predict`)."""
    from .solvers import predict as _predict
    return _predict(scenario, profile)


def predict_many(scenarios, profile):
    """The analytic predictions of many scenarios, solved as one batch
    (:func:`model.solvers.predict_many`)."""
    from .solvers import predict_many as _predict_many
    return _predict_many(scenarios, profile)


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
    if name == "compile_rack":
        from .rack import compile_rack
        return compile_rack
    if name == "InputError":
        from .errors import InputError
        return InputError
    raise AttributeError(name)
