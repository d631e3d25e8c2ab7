"""The pure domain model: scenario, workload, the compiled rack and its mechanisms,
the analytic solver, profiles and run kinds. No I/O beyond reading embedded
package data.

Data flows one way: ``Scenario`` + ``Profile`` -> :func:`model.rack.compile_rack`
-> ``RackSpec`` -> a solver (:func:`predict` here, or ``sim``'s simulators)
-> ``Prediction``.

``from model import predict`` gives the analytic prediction function.
"""

__all__ = ["Scenario", "Profile", "Prediction", "predict", "compile_rack", "InputError"]


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
        from .solvers import predict
        return predict
    if name == "compile_rack":
        from .rack import compile_rack
        return compile_rack
    if name == "InputError":
        from .errors import InputError
        return InputError
    raise AttributeError(name)
