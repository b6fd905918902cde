Dva muži ve slaměných kloboucích prohlížejí rostlinu u plotu.
Malý chlapec se učí jezdit na kole s pomocnými kolečky.
Mokrý pes nese žlutý míč po písku.
Mladá žena v zástěře krájí cibuli a vaří polévku.
V parku hraje asi osm dětí fotbal na trávě.
Na dřevěné lavičce v parku sedí šedovlasý muž a čte.
Dítě v červených plavkách skáče do bazénu.
Psi ve sněhu.
Dospívající kluk v čepici předvádí trik na skateboardu.
Kytarista hraje kolemjdoucím v pěší zóně.
Žena v kabátě drží nad sebou deštník.
Mladí lidé se smějí u kavárenského stolku.
Chlapec sedí vysoko na stromě.
Na klidném jezeře rybaří muž.
Centrem města prochází průvod a lidé jásají.
Velký černý pes aportuje větev z řeky.
Cyklista na horském průsmyku.
Žena tlačí kočárek.
Dvě sestry stavějí velký písečný hrad.
Muž v kuchařském rondonu krájí zeleninu.
Dělníci na staveništi.
Čerstvě oddaný pár tančí před hosty.
Malý chlapec drží v ruce čokoládovou zmrzlinu.
Dva týmy hrají fotbal na stadionu.
Žena a pes běží po cestě v parku.
Surfař na moři.
Čtyřčlenná rodina piknikuje pod stromem.
Žena s brýlemi plete.
Kluci na trampolíně.
Mladý muž mění duši před obchodem.
Kůň skáče.
Dítě stojí u rybníka a krmí kachny.
Skupina studentů sedí s notebooky u stolu.
Prodavačka stojí za svým stánkem s ovocem.
Muž telefonuje na 7. koleji.
Snowboardista v oranžové bundě skáče proti modré obloze.
Školáci s batohy jdou dolů ulicí.
V parku chytá pes modrý disk ve vzduchu.
Rocková kapela hraje před publikem.
Žena drží fotoaparát a fotí vlny.
Horolezec na kolmé stěně.
Dvě ženy v kuchyni plné mouky.
Chlapec kopne do míče.
Miminko spí.
Stovky lidí běží 42 kilometrů městem.
Muž s válečkem pracuje na zdi.
Dívka s jezdeckou přilbou jede na poníkovi po výběhu.
Někdo čeká na autobusové zastávce.
Zájezd stojí na náměstí před katedrálou.
Pes odpočívá v obývacím pokoji.
Děti na hřišti.
Žena něco nese.
Muž prodává na ulici klobásy před „Grilem u Pepy“.
Basketbalista skáče ke koši.
Dva zamilovaní se procházejí bosi po písku.
Muž hraje hudbu před pizzerií „Luigi’s“.
Jeden dělník podává bednu druhému.
Malá holčička sedí před dortem s 6 svíčkami.
Motokrosař skáče přes hliněný kopec.
Dva huskyové táhnou muže na saních.
Žena cvičí jógu v písku.
Děti ve fontáně.
Dva lidé rybaří.
Muž nese jídlo ke stolu.
Muž se natáhl na lavičku.
Cyklistka projíždí úzkou uličkou.
Hasiči zasahují.
Dospívající dívka se slamákem čte v parku.
Muž pádluje ve žlutém kajaku peřejemi.
Muž v zimní bundě odklízí příjezdovou cestu.
V parku hrají dva pánové šachy a přihlížející se dívají.
Dítě klečí a kreslí.
Žena a tři psi.
Muž zametá.
Chlapec v plavkách skáče.
Lidé se procházejí po horách.
Zpěvačka s dlouhými vlasy zpívá před publikem.
Muž s vozíkem na trhu.
Plné metro ve špičce.
Pes ve vysoké trávě.
