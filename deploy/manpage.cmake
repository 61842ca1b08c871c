# Writes a man page (section 1) from a program's --help, gzipped as Debian
# ships them.  Run as a script:
#   cmake -DPROG=path -DNAME=dynprofctl -DSUMMARY="..." -DVERSION=0.1.0
#         -DOUT=dir/dynprofctl.1.gz -P manpage.cmake
execute_process(COMMAND ${PROG} --help OUTPUT_VARIABLE help
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${PROG} --help exited ${rc}")
endif()
# roff: a backslash doubled, a line starting with . or ' escaped.
string(REPLACE "\\" "\\\\" help "${help}")
string(REGEX REPLACE "(^|\n)([.'])" "\\1\\\\&\\2" help "${help}")
get_filename_component(dir "${OUT}" DIRECTORY)
get_filename_component(page "${OUT}" NAME_WLE)
file(WRITE "${dir}/${page}"
".TH ${NAME} 1 \"\" \"dynprof ${VERSION}\" \"dynprof\"
.SH NAME
${NAME} \\- ${SUMMARY}
.SH DESCRIPTION
The text of \\fB${NAME} \\-\\-help\\fR:
.PP
.nf
${help}.fi
.SH SEE ALSO
The dynprof documentation: README.md, docs/admin-api.md, deploy/README.md.
")
execute_process(COMMAND gzip -9nf "${dir}/${page}" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "gzip ${dir}/${page} failed")
endif()
