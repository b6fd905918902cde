Dva starší pánové se sklánějí nad květinovým záhonem.
Chlapec s helmou jede na kole tichou ulicí.
Hnědý pes běží podél moře.
Žena míchá velký hrnec na sporáku.
Děti běhají po trávníku za fotbalovým míčem.
Starší pán čte noviny na lavičce v parku.
Dívka skáče do vody.
Černý a bílý pes dovádějí ve sněhu.
Mladý skejťák skáče z rampy ve skateparku.
Vousatý muž sedí na chodníku a hraje na kytaru.
Žena jde po mokré ulici s červeným deštníkem.
Tři přátelé pijí kávu a povídají si.
Malý chlapec visí na silné větvi.
Rybář sedí v malé loďce a drží prut.
Mnoho lidí stojí u silnice a dívá se na průvod.
Pes přináší klacek z vody.
Silniční cyklista ve žlutém dresu stoupá do kopce.
Žena s kočárkem prochází mezi stánky.
Dvě malé holčičky si hrají v písku s lopatkou a kyblíkem.
Kuchař s bílou čepicí seká mrkev.
Dělník pracuje na lešení.
Novomanželé tančí.
Chlapec olizuje kornout zmrzliny.
Dva hráči běží za míčem.
Běžkyně běží se psem na vodítku.
Muž surfuje na obrovské vlně.
Rodiče a děti sedí na dece v trávě a jedí.
Starší paní sedí na gauči a plete šálu.
Dvě děti skáčou na trampolíně na zahradě.
Muž klečí vedle kola a lepí pneumatiku.
Hnědý kůň skáče přes překážku.
Malá holčička hází kachnám chleba do vody.
Mladí lidé se učí u dlouhých stolů v knihovně.
Trhovkyně podává zákazníkovi tašku jablek.
Podnikatel čeká na nástupišti s mobilem v ruce.
Snowboardista skáče.
Děti ve školních uniformách jdou vedle sebe po chodníku.
Pes vyskočí a chňapne po frisbee.
Hudebníci vystupují na koncertě.
Turistka fotí moře.
Horolezec visí na strmé skále.
Dvě kamarádky spolu pečou.
Chlapec kope do fotbalového míče v uličce.
Otec drží své spící miminko.
Mnoho běžců běží po ulici.
Malíř natírá fasádu bílou barvou.
Malá holčička sedí na bílém poníkovi.
Muž stojí na zastávce a čeká na autobus.
Turisté fotografují starou katedrálu.
Malý pes spí na gauči.
Dvě děti sedí na houpačkách.
Žena balancuje na hlavě koš s ovocem.
Muž griluje buřty u stánku s občerstvením.
Muž hází basketbalový míč na koš.
Muž a žena jdou podél moře.
Starší muž hraje na akordeon.
Dva muži nesou krabice z náklaďáku.
Dítě sfukuje svíčky.
Motorkář jede po prašné cestě.
Tažní psi běží sněhem.
Žena stojí na pláži na jedné noze.
Děti si hrají ve vodě kašny.
Dědeček a jeho vnuk spolu chytají ryby.
Číšník balancuje se třemi talíři.
Muž leží na lavičce v parku.
Žena šlape na kole s košíkem plným květin.
Hasiči hasí požár.
Dívka leží na louce a čte knihu.
Dva lidé jedou na kajaku.
Muž uklízí sníh lopatou.
Dva starší muži sedí u šachovnice.
Malá holčička kreslí barevnými křídami.
Žena jde na procházku se třemi psy.
Metař zametá chodník.
Chlapec skáče do vody.
Skupina turistů s batohy jde horami.
Zpěvačka stojí na pódiu.
Trhovec tlačí vozík plný rajčat.
Mnoho cestujících se tlačí ve vlaku.
Pes běží po louce.
