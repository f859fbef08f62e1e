"""Conan 2 recipe for typeflow (header-only, C++20).

    conan create . -pr:a .ci/conan/profile --build=missing       # see scripts/conan_check.sh
    conan create . -pr:a .ci/conan/profile -o "&:with_distributed=True"

Dependencies are ordinary Conan requirements (version ranges), so with a
remote they come from ConanCenter. Offline, a profile's [platform_requires]
section (.ci/conan/profile) resolves them to the system's packages (Debian:
libeigen3-dev, zlib1g-dev, libcereal-dev, rapidjson-dev, libboost1.81-dev,
libssl-dev), found at build time by CMake's own find_package.

Consumers: find_package(typeflow CONFIG REQUIRED [COMPONENTS io distributed])
and link typeflow::typeflow, typeflow::io, typeflow::distributed (and
typeflow::cuda with with_cuda: the CUDA toolkit, cuDNN and NCCL are not
Conan packages and are looked up on the system, like the plain CMake package
does). The package carries typeflow's own CMake package (the one `cmake
--install` writes, with its component logic and its messages naming missing
dependencies), so CMakeDeps does not generate one (cmake_find_mode "none"):
see package_info().
"""

import os
import re

from conan import ConanFile
from conan.errors import ConanInvalidConfiguration
from conan.tools.build import check_min_cppstd
from conan.tools.cmake import CMake, CMakeToolchain, CMakeDeps, cmake_layout
from conan.tools.files import copy, load

required_conan_version = ">=2.0"


class TypeflowConan(ConanFile):
    name = "typeflow"
    description = "A TensorFlow-style dataflow graph as C++ types (header-only, C++20, Eigen)"
    topics = ("machine-learning", "autodiff", "header-only", "eigen")
    license = "unknown"  # the repository has no LICENSE file yet
    package_type = "header-library"
    settings = "os", "arch", "compiler", "build_type"
    options = {
        "with_io": [True, False],           # typeflow::io: Cereal, RapidJSON
        "with_distributed": [True, False],  # typeflow::distributed: + Boost (Asio), OpenSSL, Threads
        "with_cuda": [True, False],         # typeflow::cuda: CUDA toolkit, cuDNN, NCCL (system)
    }
    default_options = {
        "with_io": True,
        "with_distributed": False,
        "with_cuda": False,
    }
    exports_sources = "include/*", "cmake/*", "CMakeLists.txt", "LICENSE*"
    no_copy_source = True

    def set_version(self):
        if self.version:
            return
        text = load(self, os.path.join(self.recipe_folder, "CMakeLists.txt"))
        m = re.search(r"project\(typeflow\s+VERSION\s+([0-9.]+)", text)
        self.version = m.group(1)

    def layout(self):
        cmake_layout(self, src_folder=".")

    def requirements(self):
        # Ranges, so that a profile's [platform_requires] with the system's
        # exact versions satisfies them. transitive_headers: typeflow's
        # headers include theirs.
        self.requires("eigen/[>=3.4.0 <6]", transitive_headers=True)
        # tf::data reads .gz files through zlib (TYPEFLOW_HAVE_ZLIB). Not an
        # option: the package (its typeflowConfig.cmake) is the same for
        # every option value, as package_id() says.
        self.requires("zlib/[>=1.2.11 <2]", transitive_headers=True, transitive_libs=True)
        if self.options.with_io or self.options.with_distributed:
            self.requires("cereal/[>=1.3.0 <2]", transitive_headers=True)
            self.requires("rapidjson/[>=1.1.0 <2]", transitive_headers=True)
        if self.options.with_distributed:
            self.requires("boost/[>=1.81.0 <2]", transitive_headers=True)
            self.requires("openssl/[>=3.0.0 <4]", transitive_headers=True, transitive_libs=True)

    def validate(self):
        if self.settings.compiler.get_safe("cppstd"):
            check_min_cppstd(self, 20)
        if self.options.with_cuda and self.settings.os not in ("Linux", "Windows"):
            raise ConanInvalidConfiguration("typeflow: with_cuda needs Linux or Windows")

    def package_id(self):
        # Header-only: one package whatever the settings and options (the
        # options only add requirements; the package always holds every
        # component's CMake export file).
        self.info.clear()

    def generate(self):
        tc = CMakeToolchain(self)
        tc.cache_variables["TYPEFLOW_BUILD_TESTS"] = False
        tc.cache_variables["TYPEFLOW_BUILD_EXAMPLES"] = False
        tc.cache_variables["TYPEFLOW_BUILD_BENCHMARKS"] = False
        tc.cache_variables["TYPEFLOW_BUILD_DIST"] = False
        tc.cache_variables["TYPEFLOW_INSTALL"] = True
        tc.cache_variables["TYPEFLOW_USE_ZLIB"] = True
        tc.generate()
        CMakeDeps(self).generate()

    def build(self):
        pass  # nothing to compile

    def package(self):
        cmake = CMake(self)
        cmake.configure()
        cmake.install()
        for pattern in ("LICENSE*", "COPYING*"):
            copy(self, pattern, self.source_folder, os.path.join(self.package_folder, "licenses"))

    def package_info(self):
        # Consumers use the package's own typeflowConfig.cmake (installed by
        # `cmake --install` above under share/cmake/typeflow): it finds the
        # dependencies (Conan's, or the system's for [platform_requires]) and
        # checks the components. CMakeDeps only has to make it findable.
        self.cpp_info.set_property("cmake_find_mode", "none")
        self.cpp_info.builddirs.append(os.path.join("share", "cmake", "typeflow"))
        self.cpp_info.set_property("cmake_file_name", "typeflow")
        self.cpp_info.set_property("cmake_target_name", "typeflow::typeflow")

        # The same layout as components, for the other generators
        # (PkgConfigDeps, MSBuildDeps, ...) and for CMakeDeps if a consumer
        # turns cmake_find_mode back on.
        core = self.cpp_info.components["typeflow"]
        core.set_property("cmake_target_name", "typeflow::typeflow")
        core.set_property("pkg_config_name", "typeflow")
        core.includedirs = ["include"]
        core.bindirs = []
        core.libdirs = []
        core.builddirs = [os.path.join("share", "cmake", "typeflow")]
        core.requires = ["eigen::eigen", "zlib::zlib"]
        core.defines = ["TYPEFLOW_HAVE_ZLIB"]
        if self.options.with_io or self.options.with_distributed:
            self._component("io", ["typeflow", "cereal::cereal", "rapidjson::rapidjson"])
        if self.options.with_distributed:
            dist = self._component("distributed", ["io", "boost::headers", "openssl::crypto"])
            if self.settings.os in ("Linux", "FreeBSD"):
                dist.system_libs = ["pthread"]
        if self.options.with_cuda:
            cuda = self._component("cuda", ["typeflow"])
            cuda.system_libs = ["cudart", "cublas", "cublasLt", "cudnn", "nccl"]

    def _component(self, name, requires):
        """A header-only component typeflow::<name> that requires the given components."""
        c = self.cpp_info.components[name]
        c.set_property("cmake_target_name", f"typeflow::{name}")
        c.set_property("pkg_config_name", f"typeflow-{name}")
        c.includedirs = []
        c.bindirs = []
        c.libdirs = []
        c.requires = requires
        return c
