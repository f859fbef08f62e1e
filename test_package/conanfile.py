import os

from conan import ConanFile
from conan.tools.build import can_run
from conan.tools.cmake import CMake, CMakeToolchain, cmake_layout


class TypeflowTestConan(ConanFile):
    settings = "os", "arch", "compiler", "build_type"
    generators = "CMakeDeps", "VirtualRunEnv"
    test_type = "explicit"

    def requirements(self):
        self.requires(self.tested_reference_str)

    def layout(self):
        cmake_layout(self)

    def _components(self):
        opts = self.dependencies[self.tested_reference_str.split("/")[0]].options
        comps = []
        if opts.with_io or opts.with_distributed:
            comps.append("io")
        if opts.with_distributed:
            comps.append("distributed")
        if opts.with_cuda:
            comps.append("cuda")
        return comps

    def generate(self):
        tc = CMakeToolchain(self)
        tc.cache_variables["TYPEFLOW_TEST_COMPONENTS"] = ";".join(self._components())
        tc.generate()

    def build(self):
        cmake = CMake(self)
        cmake.configure()
        cmake.build()

    def test(self):
        if not can_run(self):
            return
        for exe in ["test_package"] + [f"test_package_{c}" for c in self._components()]:
            self.run(os.path.join(self.cpp.build.bindir, exe), env="conanrun")
