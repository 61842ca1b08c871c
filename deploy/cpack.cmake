# Debian packages with CPack: `cpack -G DEB` in a build tree (or `make package`).
# Included at the end of the top-level CMakeLists.txt, after every install() rule, so
# the list of install components is complete.
#
# Install components are grouped into packages:
#   libdynprof0          component lib|runtime|Runtime|libdynprof     the shared library
#   libdynprof-dev       component dev|devel|Development|headers      header, .so, .pc
#   dynprof-agent        component agent                              daemon, unit, tmpfiles
#   dynprof-coordinator  component coordinator|server                 daemon, unit
#   dynprofctl           component ctl|dynprofctl                     the command line
#   python3-dynprof      component python|python3                     the Python binding
# Any other component goes into `dynprof-<component>`.  Every package depends on the
# others it needs; shared library dependencies come from dpkg-shlibdeps.
#
#   dynprof-examples     component examples                           dynprof-train-sim
#
# install() rules without a COMPONENT (CMake calls them Unspecified) cannot be split.
# deploy/CMakeLists.txt installs the programs into their components again, so when the
# library's, the daemons' and the binding's components are all there, Unspecified is
# left out of the packages (test_deploy_deb checks that every file it installs is in
# some package).  Otherwise everything goes into ONE package, `dynprof`, whose
# maintainer scripts do what both daemon packages' would.

# Packing never builds: `cpack` packs the build tree as it is (`make build` first), so
# the packaging test cannot rebuild binaries other tests are running.  Also makes the
# install target not depend on `all`.
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY ON)

set(CPACK_PACKAGE_NAME dynprof)
set(CPACK_PACKAGE_VENDOR "dynprof")
# Who answers for the packages: give your own when you build packages to hand out
# (an address under .invalid says there is none).
set(DYNPROF_DEB_MAINTAINER "dynprof maintainers <maintainers@dynprof.invalid>"
  CACHE STRING "the Maintainer of the Debian packages")
set(CPACK_PACKAGE_CONTACT "${DYNPROF_DEB_MAINTAINER}")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "cluster-wide control of training profilers")
set(CPACK_PACKAGE_HOMEPAGE_URL "https://github.com/dynprof/dynprof")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_GENERATOR DEB)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_GROUPING ONE_PER_GROUP)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_STRIP_FILES ON)

set(dp_version "${PROJECT_VERSION}-1")
set(dp_deb_gen ${PROJECT_BINARY_DIR}/deploy/gen/debian)

get_cmake_property(dp_components COMPONENTS)
set(dp_split ON)
foreach(comp lib dev agent coordinator python)
  if(NOT comp IN_LIST dp_components)
    set(dp_split OFF)
  endif()
endforeach()
if(dp_split AND "Unspecified" IN_LIST dp_components)
  list(REMOVE_ITEM dp_components Unspecified)
  set(CPACK_COMPONENTS_ALL ${dp_components})
  message(STATUS "cpack: packages from components ${dp_components}; "
    "install() rules without a COMPONENT are left out")
endif()
if(NOT dp_split)
  set(CPACK_DEB_COMPONENT_INSTALL OFF)
  set(CPACK_DEBIAN_PACKAGE_NAME dynprof)
  set(CPACK_DEBIAN_PACKAGE_SECTION admin)
  set(CPACK_DEBIAN_PACKAGE_DEPENDS "adduser | passwd")
  set(CPACK_DEBIAN_PACKAGE_RECOMMENDS python3)
  set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
    "The library linked into training processes (with its header, pkg-config file\nand Python binding), the node agent, the coordinator and dynprofctl, with\ntheir systemd units.")
  set(d ${dp_deb_gen}/dynprof)
  set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    "${d}/postinst;${d}/prerm;${d}/postrm;${d}/conffiles")
  include(CPack)
  return()
endif()

set(dp_groups "")
foreach(comp IN LISTS dp_components)
  if(comp MATCHES "^(lib|runtime|Runtime|libdynprof)$")
    set(group lib)
  elseif(comp MATCHES "^(dev|devel|Development|headers)$")
    set(group dev)
  elseif(comp STREQUAL "agent")
    set(group agent)
  elseif(comp MATCHES "^(coordinator|server)$")
    set(group coordinator)
  elseif(comp MATCHES "^(ctl|dynprofctl)$")
    set(group ctl)
  elseif(comp MATCHES "^(python|python3)$")
    set(group python)
  elseif(comp MATCHES "^(examples|example)$")
    set(group examples)
  elseif(comp STREQUAL "Unspecified")
    set(group misc)
  else()
    string(MAKE_C_IDENTIFIER "${comp}" group)
    set(CPACK_DEBIAN_${group}_PACKAGE_NAME "dynprof-${comp}")
  endif()
  string(TOUPPER "${comp}" compu)
  set(CPACK_COMPONENT_${compu}_GROUP ${group})
  list(APPEND dp_groups ${group})
endforeach()
list(REMOVE_DUPLICATES dp_groups)

set(CPACK_DEBIAN_LIB_PACKAGE_NAME libdynprof0)
set(CPACK_DEBIAN_LIB_PACKAGE_SECTION libs)
# A shlibs file and the ldconfig trigger.
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_DEV_PACKAGE_NAME libdynprof-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_AGENT_PACKAGE_NAME dynprof-agent)
set(CPACK_DEBIAN_COORDINATOR_PACKAGE_NAME dynprof-coordinator)
set(CPACK_DEBIAN_CTL_PACKAGE_NAME dynprofctl)
set(CPACK_DEBIAN_CTL_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PYTHON_PACKAGE_NAME python3-dynprof)
set(CPACK_DEBIAN_PYTHON_PACKAGE_SECTION python)
set(CPACK_DEBIAN_PYTHON_PACKAGE_ARCHITECTURE all)
set(CPACK_DEBIAN_MISC_PACKAGE_NAME dynprof)
set(CPACK_DEBIAN_EXAMPLES_PACKAGE_NAME dynprof-examples)
set(CPACK_DEBIAN_EXAMPLES_DESCRIPTION
  "Example programs of dynprof: dynprof-train-sim, a simulated training rank whose\nprofiler writes a trace into the output directory of every window it runs.")
# dpkg-shlibdeps cannot see libdynprof0 (not installed while packing): by hand.
set(CPACK_DEBIAN_EXAMPLES_PACKAGE_SHLIBDEPS OFF)
set(CPACK_DEBIAN_AGENT_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_COORDINATOR_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_LIB_DESCRIPTION
  "The library, libdynprof, linked into training processes: reads the pushed\nprofiling window at every step from shared memory.")
set(CPACK_DEBIAN_DEV_DESCRIPTION
  "Development files of libdynprof: the public header dynprof.h and the pkg-config file.")
set(CPACK_DEBIAN_AGENT_DESCRIPTION
  "The node agent, one per node: applies pushed profiling schedules to the training\nprocesses of the node and reports what they did.  systemd unit included.")
set(CPACK_DEBIAN_COORDINATOR_DESCRIPTION
  "The coordinator: owns the profiling schedule of every job, pushes it to the agents\nand serves the admin API and the status page.  systemd unit included.")
set(CPACK_DEBIAN_CTL_DESCRIPTION
  "dynprofctl, the operator's command line over the coordinator's admin API: schedule\nand follow profiling windows, a job's status, its stragglers and rules.")
set(CPACK_DEBIAN_PYTHON_DESCRIPTION
  "The Python binding: dynprof.Monitor for training loops, a drop-in for MindSpore's\nDynamicProfilerMonitor and a PyTorch hook.")
set(CPACK_DEBIAN_MISC_DESCRIPTION "The remaining files of dynprof.")

# Dependencies between our own packages, only on those being built.
macro(dp_depend group)
  set(dp_deps "")
  foreach(dep ${ARGN})
    if(dep MATCHES "^@(.*)$")
      list(FIND dp_groups ${CMAKE_MATCH_1} dp_i)
      if(dp_i GREATER -1)
        string(TOUPPER "${CMAKE_MATCH_1}" dp_gu)
        list(APPEND dp_deps "${CPACK_DEBIAN_${dp_gu}_PACKAGE_NAME} (= ${dp_version})")
      endif()
    else()
      list(APPEND dp_deps "${dep}")
    endif()
  endforeach()
  string(TOUPPER "${group}" dp_gu)
  list(JOIN dp_deps ", " CPACK_DEBIAN_${dp_gu}_PACKAGE_DEPENDS)
endmacro()
dp_depend(dev @lib)
dp_depend(examples "libc6 (>= 2.34)" @lib)
# pyproject.toml's requires-python.
dp_depend(python "python3 (>= 3.8)" @lib)
dp_depend(agent "adduser | passwd")
dp_depend(coordinator "adduser | passwd")
# The coordinator's host usually wants its command line too.
list(FIND dp_groups ctl dp_i)
if(dp_i GREATER -1)
  set(CPACK_DEBIAN_COORDINATOR_PACKAGE_RECOMMENDS "dynprofctl (= ${dp_version})")
endif()

# Each package's copyright and changelog, in /usr/share/doc/PACKAGE (Debian policy).
set(dp_doc ${PROJECT_BINARY_DIR}/deploy/gen/doc)
configure_file(${PROJECT_SOURCE_DIR}/deploy/debian/changelog.in ${dp_doc}/changelog
  @ONLY)
execute_process(COMMAND gzip -9nc ${dp_doc}/changelog
  OUTPUT_FILE ${dp_doc}/changelog.Debian.gz)
foreach(comp IN LISTS dp_components)
  string(TOUPPER "${comp}" compu)
  string(TOUPPER "${CPACK_COMPONENT_${compu}_GROUP}" dp_gu)
  install(FILES ${PROJECT_SOURCE_DIR}/deploy/debian/copyright
    ${dp_doc}/changelog.Debian.gz
    DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/${CPACK_DEBIAN_${dp_gu}_PACKAGE_NAME}
    COMPONENT ${comp})
endforeach()

# The library's package runs ldconfig once dpkg is done (its triggers file).
file(WRITE ${dp_deb_gen}/libdynprof0/triggers "activate-noawait ldconfig\n")
set(CPACK_DEBIAN_LIB_PACKAGE_CONTROL_EXTRA ${dp_deb_gen}/libdynprof0/triggers)

# Maintainer scripts of the daemons (deploy/debian/*.in, made by deploy/CMakeLists.txt).
foreach(group agent coordinator)
  string(TOUPPER "${group}" dp_gu)
  set(d ${dp_deb_gen}/dynprof-${group})
  set(CPACK_DEBIAN_${dp_gu}_PACKAGE_CONTROL_EXTRA
    "${d}/postinst;${d}/prerm;${d}/postrm;${d}/conffiles")
endforeach()

include(CPack)
