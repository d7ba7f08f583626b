# Finds hwloc (Debian: libhwloc-dev) and defines the imported target HWLOC::hwloc. Used by mgjoin's build
# and installed beside mgjoinConfig.cmake, so that an installed libengine finds hwloc where its user's
# machine has it. Hints: HWLOC_ROOT, or HWLOC_INCLUDE_DIR and HWLOC_LIBRARY.
find_path(HWLOC_INCLUDE_DIR hwloc.h)
find_library(HWLOC_LIBRARY hwloc)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(HWLOC REQUIRED_VARS HWLOC_LIBRARY HWLOC_INCLUDE_DIR)
if(HWLOC_FOUND AND NOT TARGET HWLOC::hwloc)
  add_library(HWLOC::hwloc UNKNOWN IMPORTED)
  set_target_properties(HWLOC::hwloc PROPERTIES IMPORTED_LOCATION "${HWLOC_LIBRARY}"
                                                INTERFACE_INCLUDE_DIRECTORIES "${HWLOC_INCLUDE_DIR}")
endif()
mark_as_advanced(HWLOC_INCLUDE_DIR HWLOC_LIBRARY)
