"""cntk.internal.utils: helpers for Function construction and tests."""
from ctk.internal import (get_data_type, get_python_function_arguments, map_function_arguments, eval,  # noqa: F401
                          _value_as_sequence_or_array, _py_dict_to_cntk_dict, _ones_like)
