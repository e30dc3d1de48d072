"""Running the model's code in Jupyter kernels, streamed back as LMC computer chunks."""

from lmc.computer.computer import Computer
from lmc.computer.kernelspecs import kernels_dir
from lmc.computer.output import DEFAULT_OUTPUT_LIMIT, BoundedOutput, bound_output

__all__ = ["DEFAULT_OUTPUT_LIMIT", "BoundedOutput", "Computer", "bound_output", "kernels_dir"]
