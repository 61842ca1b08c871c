# Run by `cmake --install` / cpack (see CMakeLists.txt): installs the systemd unit
# DP_UNIT, its /etc/default file and, for the agent, the tmpfiles.d entry, with the
# paths of the prefix being installed to.
#
# Generators that stage without DESTDIR set CMAKE_INSTALL_PREFIX to the staging
# directory followed by CPACK_PACKAGING_INSTALL_PREFIX: the units must name the latter.
# (The DEB generator stages with DESTDIR, so there the prefix is /usr already.)

set(dp_prefix "${CMAKE_INSTALL_PREFIX}")
set(dp_root "")
if(CPACK_PACKAGING_INSTALL_PREFIX AND
    dp_prefix MATCHES "^(.*)${CPACK_PACKAGING_INSTALL_PREFIX}$")
  set(dp_root "${CMAKE_MATCH_1}")
  set(dp_prefix "${CPACK_PACKAGING_INSTALL_PREFIX}")
endif()
if(dp_prefix STREQUAL "/usr")
  set(dp_sysconf "/etc")
else()
  set(dp_sysconf "${dp_prefix}/etc")
endif()
set(DYNPROF_BINDIR "${dp_prefix}/bin")
set(DYNPROF_SYSCONFDIR "${dp_sysconf}")
set(DYNPROF_TMPFILESDIR "${dp_prefix}/lib/tmpfiles.d")

string(MD5 dp_key "${dp_root}${dp_prefix}")
set(dp_out "${DP_GEN}/${dp_key}")
configure_file("${DP_SRC}/systemd/${DP_UNIT}.service.in"
  "${dp_out}/${DP_UNIT}.service" @ONLY)
file(INSTALL DESTINATION "${dp_root}${dp_prefix}/lib/systemd/system" TYPE FILE
  FILES "${dp_out}/${DP_UNIT}.service")
configure_file("${DP_SRC}/systemd/${DP_UNIT}.default" "${dp_out}/${DP_UNIT}" COPYONLY)
file(INSTALL DESTINATION "${dp_root}${dp_sysconf}/default" TYPE FILE
  FILES "${dp_out}/${DP_UNIT}")
if(DP_UNIT STREQUAL "dynprof-agent")
  configure_file("${DP_SRC}/systemd/dynprof.tmpfiles" "${dp_out}/dynprof.conf" COPYONLY)
  file(INSTALL DESTINATION "${dp_root}${DYNPROF_TMPFILESDIR}" TYPE FILE
    FILES "${dp_out}/dynprof.conf")
endif()
