; Included by electron-builder's NSIS installer (electron-builder.yml: nsis.include).
; For JPEG, PNG and WebP files, per user (HKCU, no admin rights needed) and without taking over the default app:
;  - a ProgID "Crisp.Image" and an OpenWithProgids entry per extension: Crisp appears under "Open with";
;  - a verb "Upscale with Crisp" under SystemFileAssociations: the file's context menu runs
;    Crisp.exe --upscale "%1" (electron/main/launchArgs.ts: added to the running window's queue and started
;    with the chosen preset). The same verb on folders (Directory) upscales the images in a folder.
; The uninstaller removes exactly these keys. test/electron/packaging.test.ts checks this file.

!macro crispImageType EXT
  WriteRegStr HKCU "Software\Classes\.${EXT}\OpenWithProgids" "Crisp.Image" ""
  WriteRegStr HKCU "Software\Classes\SystemFileAssociations\.${EXT}\shell\CrispUpscale" "MUIVerb" "Upscale with Crisp"
  WriteRegStr HKCU "Software\Classes\SystemFileAssociations\.${EXT}\shell\CrispUpscale" "Icon" "$INSTDIR\${APP_EXECUTABLE_FILENAME},0"
  WriteRegStr HKCU "Software\Classes\SystemFileAssociations\.${EXT}\shell\CrispUpscale\command" "" '"$INSTDIR\${APP_EXECUTABLE_FILENAME}" --upscale "%1"'
!macroend

!macro crispRemoveImageType EXT
  DeleteRegValue HKCU "Software\Classes\.${EXT}\OpenWithProgids" "Crisp.Image"
  DeleteRegKey HKCU "Software\Classes\SystemFileAssociations\.${EXT}\shell\CrispUpscale"
!macroend

!macro customInstall
  WriteRegStr HKCU "Software\Classes\Crisp.Image" "" "Image (Crisp)"
  WriteRegStr HKCU "Software\Classes\Crisp.Image\DefaultIcon" "" "$INSTDIR\${APP_EXECUTABLE_FILENAME},0"
  WriteRegStr HKCU "Software\Classes\Crisp.Image\shell\open\command" "" '"$INSTDIR\${APP_EXECUTABLE_FILENAME}" "%1"'
  !insertmacro crispImageType "jpg"
  !insertmacro crispImageType "jpeg"
  !insertmacro crispImageType "png"
  !insertmacro crispImageType "webp"
  WriteRegStr HKCU "Software\Classes\Directory\shell\CrispUpscale" "MUIVerb" "Upscale with Crisp"
  WriteRegStr HKCU "Software\Classes\Directory\shell\CrispUpscale" "Icon" "$INSTDIR\${APP_EXECUTABLE_FILENAME},0"
  WriteRegStr HKCU "Software\Classes\Directory\shell\CrispUpscale\command" "" '"$INSTDIR\${APP_EXECUTABLE_FILENAME}" --upscale "%1"'
  ; Tell Explorer the associations changed (SHCNE_ASSOCCHANGED).
  System::Call 'shell32::SHChangeNotify(i 0x08000000, i 0, p 0, p 0)'
!macroend

!macro customUnInstall
  !insertmacro crispRemoveImageType "jpg"
  !insertmacro crispRemoveImageType "jpeg"
  !insertmacro crispRemoveImageType "png"
  !insertmacro crispRemoveImageType "webp"
  DeleteRegKey HKCU "Software\Classes\Directory\shell\CrispUpscale"
  DeleteRegKey HKCU "Software\Classes\Crisp.Image"
  System::Call 'shell32::SHChangeNotify(i 0x08000000, i 0, p 0, p 0)'
!macroend
